"""The worker: owns models through leases and applies their logs.

For every model it owns, the worker loads the latest snapshot (or the initial
state), replays the log from the snapshot's ``last_id`` and then follows it
with blocking ``XREAD`` calls over all its models' logs at once. No consumer
group is needed: the snapshot's ``last_id`` is the progress marker, and the
state is a deterministic function of the log (see :mod:`service.worker.apply`).
Its parts: :mod:`~service.worker.owned` (loading a model),
:mod:`~service.worker.ownership` (lease upkeep), :mod:`~service.worker.reading`
(reads and flushes), :mod:`~service.worker.snapshots` and
:mod:`~service.worker.publishing` (metrics and the run's counts).

While it applies a full read, the next one is already sent on a second
connection (a read-ahead, used only if it is the read the worker would send
next). After each read it flushes the label requests and dead letters in one pipeline
and writes a snapshot every ``snapshot_every_entries`` entries or
``snapshot_every_seconds`` seconds; on a clean stop (SIGTERM/SIGINT or
:meth:`Worker.stop`) it finishes the read in hand, snapshots every model and
releases its leases. Every ``maintain`` tick it renews its leases, writes the
heartbeat, picks up new models, notices reconfigured or deleted ones and takes
over models whose lease expired.

A worker serving every model (no explicit list) takes only its share: the
models that :func:`service.worker.assignment.assign` gives it among the live
workers (:mod:`service.worker.membership`). A model outside its share (a worker
joined, or one came back) is handed off: flushed, snapshotted and released, and
its new owner resumes from that snapshot. A crashed worker's models are taken
over by their new owners once its leases expire; fencing by lease is
unchanged, so no model is ever applied by two workers. See
``docs/scaling.md``, "Assigning models to workers".
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

import learners
from service import metrics as m
from service.settings import Settings
from service.store import STORE_UNAVAILABLE, StoreError, connect
from service.store.cluster import is_cluster_client
from service.store.connection import SNAPSHOT_REPLY_S
from service.store.durability import read_durability, warn_unless_durable
from service.store.failures import clear_failed, mark_failed
from service.store.lease import acquire, new_worker_id, release
from service.store.models import ModelLimits, list_models
from service.store.snapshot import SnapshotFenced
from service.worker import task_lookup
from service.worker.apply import LearnerFailed
from service.worker.assignment import share
from service.worker.blas import single_thread_blas
from service.worker.history import HistoryRecorder
from service.worker.membership import leave
from service.worker.owned import Owned, load_owned
from service.worker.ownership import LeaseKeeper, as_generation
from service.worker.publishing import PUBLISH_EVERY, PublishedMarks, RunResult, publish
from service.worker.reading import flush, read_logs, send_read, take_read
from service.worker.snapshots import snapshot_due, snapshot_state, trim_log

__all__ = ["RunResult", "Worker"]

log = logging.getLogger("omtl.worker")

#: Most entries applied between two checks of the step's time budget (``max_step_seconds``).
STEP_CHUNK_MAX = 500
#: Events one read should bring at most: a log of large batch entries is read a few entries
#: at a time (``read_count`` entries of 10,000 events would be a reply of hundreds of MB).
READ_EVENTS = 50_000
#: Bytes taken from the socket per receive on the worker's connections (redis-py's default
#: is 32 KB: a read of a few MB then costs a hundred receives, each parsed in turn).
SOCKET_READ_BYTES = 512 << 10
#: Bytes one read should bring at most per log: the entries per read follow the size of the
#: entries last read, so a reply stays a few MB of memory reused from read to read (not
#: hundreds of MB of fresh pages) whatever the entries carry; a larger entry comes alone.
READ_BYTES = 2 << 20


@dataclass
class _Ahead:
    """A read sent ahead (:meth:`Worker._send_ahead`): the logs it reads, each with its
    model and the id it reads after, how many entries per log, how many replies."""

    logs: list[tuple[bytes, Owned, str]]
    count: int
    replies: int

    def matches(self, reading: dict[bytes, Owned]) -> bool:
        """Whether it is the read the worker would send now over ``reading`` (the same
        logs in the same order, of the same models, each after the same id)."""
        return len(self.logs) == len(reading) and all(
            stream == now and owned is reading[now] and owned.state.read_id == after
            for (stream, owned, after), now in zip(self.logs, reading, strict=True)
        )


class Worker:
    """Applies the logs of the models it owns (see the module docstring).

    Parameters
    ----------
    settings : Settings
        Redis URL, intervals, lease lifetime, read sizes.
    models : sequence of str, optional
        The models to serve; None serves this worker's share of every model in
        ``omtl:models`` among the live workers (new models and workers are
        picked up while running).
    worker_id : str, optional
        The id written into leases; unique by default.
    """

    def __init__(
        self,
        settings: Settings,
        models: Sequence[str] | None = None,
        worker_id: str | None = None,
    ) -> None:
        if not settings.redis_url:
            raise ValueError("the worker needs a Redis URL (settings.redis_url / REDIS_URL)")
        task_lookup.warm()  # compiled (or loaded) before the first read and lease
        self.settings = settings
        self.wanted = list(models) if models is not None else None
        self.id = worker_id or new_worker_id()
        self.r = connect(
            settings.redis_url, block_s=settings.block_ms / 1000, reply_s=SNAPSHOT_REPLY_S
        )
        # raw XREAD replies: the worker reads the flat field lists itself
        self.r.set_response_callback("XREAD", lambda response, **_: response)
        self.owned: dict[str, Owned] = {}
        self.by_log: dict[bytes, Owned] = {}
        #: entries per XREAD: ``read_count``, fewer while the entries carry many events or
        #: bytes (:data:`READ_EVENTS`, :data:`READ_BYTES`); one until an entry was seen
        self.read_entries = 1
        #: events and bytes per entry in the last read (what ``read_entries`` follows)
        self._entry_events = 1
        self._entry_bytes = 1
        #: the read sent ahead, on a connection of its own (plain Redis only)
        self._ahead: _Ahead | None = None
        self._ahead_conn: Any = None
        plain = not is_cluster_client(self.r)
        self._read_ahead = plain
        if plain:  # set before any connection is made (connect() does no I/O)
            self.r.connection_pool.connection_kwargs["socket_read_size"] = SOCKET_READ_BYTES
        #: models that could not be loaded -> monotonic time of the next try
        self.broken: dict[str, float] = {}
        self.retry_s = settings.model_retry_s
        #: every model this worker has metric series of (owned or failed at some point)
        self.served: set[str] = set()
        self.stopping = False
        self.ttl_ms = settings.lease_ttl_ms
        self.tick = min(0.5, settings.lease_ttl_ms / 3000.0)
        self.result = RunResult()
        self.keeper = LeaseKeeper(
            settings.redis_url,
            self.id,
            self.ttl_ms,
            settings.heartbeat_ttl_s,
            self.tick,
            settings.lease_stall_s,
        )
        #: what was published per model and generation, kept across reloads so that
        #: replaying entries after a reload never counts them twice
        self.published: dict[tuple[str, int], PublishedMarks] = {}
        #: the dashboard's per-model history stream (docs/architecture.md, "The history stream")
        self.history = HistoryRecorder(settings.history_interval_s, settings.history_maxlen)

    # ------------------------------------------------------------ control
    def stop(self, *_: Any) -> None:
        """Ask the loop to finish the read in hand, snapshot, release and return."""
        self.stopping = True

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT stop the worker cleanly (main thread only)."""

        def handler(signum: int, frame: FrameType | None) -> None:
            log.info("signal %d: draining and snapshotting", signum)
            self.stop()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    # ------------------------------------------------------------ ownership
    def _load(self, name: str, recorded: tuple[set[bytes], dict[bytes, str]] | None = None) -> None:
        owned = load_owned(self.r, name, ModelLimits.from_settings(self.settings), recorded)
        if owned is None:
            release(self.r, name, self.id)
            return
        clear_failed(self.r, name)  # also a record left by a deleted incarnation
        if self.broken.pop(name, None) is not None:
            m.MODEL_FAILED.labels(name).set(0)
            log.info("model %r loads again", name)
        state = owned.state
        self.served.add(name)
        marks = self.published.get((name, state.generation))
        if marks is not None:
            marks.restore(state)
        self.owned[name] = owned
        self.by_log[owned.log_key.encode()] = owned
        self.keeper.own(name)
        m.LEASE_OWNER.labels(name, self.id).set(1)
        # the kernels of the model's learner, before its first batch and under a renewed
        # lease (once per learner and process; learners.load_kernels)
        try:
            learners.load_kernels(state.learner.name, state.learner.hyper)
        except Exception as exc:  # the first batch loads them instead
            log.warning("model %r: kernels not loaded ahead (%s)", name, exc)
        log.info(
            "worker %s owns model %r from version %d, last id %s",
            self.id,
            name,
            state.version,
            state.last_id,
        )

    def _fail(self, name: str, exc: BaseException, serving: bool = False) -> None:
        """The model cannot be loaded (or, ``serving``, served): leave it alone, report it,
        retry it later. A serving failure is a bug: its traceback goes to the log."""
        reason = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        if serving:
            reason = f"while serving it: {reason}"
        log.error(
            "cannot %s model %r, marked failed (retrying in %.0f s): %s",
            "serve" if serving else "load",
            name,
            self.retry_s,
            reason,
            exc_info=exc if serving else None,
        )
        self.broken[name] = time.monotonic() + self.retry_s
        self.served.add(name)
        m.MODEL_FAILED.labels(name).set(1)
        with contextlib.suppress(StoreError):  # a broken key type must not stop the worker
            mark_failed(self.r, name, reason, self.id, 4 * self.retry_s)
        release(self.r, name, self.id)

    def _broke(self, owned: Owned, exc: Exception) -> None:
        """Serving ``owned`` raised an unexpected error (a bug in the learner or here, out
        of the entries' application, which :meth:`_roll_back` handles): the model is let
        go and marked failed, as one that cannot be loaded (its reason in GET /models/{m},
        retried every ``model_retry_s``); the worker's other models go on."""
        name = owned.state.name
        if name in self.owned:  # ``owned``, or what a roll-back loaded in its place
            self._drop(name, "failed", unsaved_lost=True)  # a retry replays from the snapshot
        self._fail(name, exc, serving=True)

    def _drop(
        self,
        name: str,
        reason: str,
        deleted: bool = False,
        count: bool = True,
        unsaved_lost: bool = False,
    ) -> None:
        """Let ``name`` go. With ``unsaved_lost`` (the lease or Redis was lost, or serving
        the model failed) its work after the last snapshot is not kept: whoever takes the
        model next replays those entries, so this run counts its work only up to that
        snapshot."""
        owned = self.owned.pop(name, None)
        if owned is not None:
            self.by_log.pop(owned.log_key.encode(), None)
            self.keeper.disown(name)
            self.published[(name, owned.state.generation)] = PublishedMarks.of(owned.state)
            self.history.forget(name)
            if count:
                self.result.count(owned, upto=owned.snapshot_totals if unsaved_lost else None)
            m.LEASE_OWNER.labels(name, self.id).set(0)
            log.warning("worker %s dropped model %r: %s", self.id, name, reason)
        if deleted:  # its series would be exported (and alert) forever
            self.broken.pop(name, None)
            self.served.discard(name)
            for key in [key for key in self.published if key[0] == name]:
                del self.published[key]
            m.forget_model(name)

    def _share(self, names: list[str]) -> list[str]:
        """The models among ``names`` this worker should serve: all of an explicit list,
        else its share among the live workers."""
        if self.wanted is not None:
            return names
        members = self.keeper.members
        if members is None:
            members = self.keeper.beat_now()
        return share(names, members, self.id)

    def _hand_off(self, name: str) -> None:
        """Give a model outside this worker's share to its new owner: flush, snapshot, release."""
        owned = self.owned.get(name)
        if owned is None:
            return
        if owned.outbox:
            flush(self.r, owned, self.settings.queries_maxlen)
        if owned.state.entries_since_snapshot > 0 and not self._snapshot(owned):
            return  # fenced: the lease was already lost, the model is dropped
        self.owned.pop(name)
        self.by_log.pop(owned.log_key.encode(), None)
        self.keeper.disown(name)
        self.published[(name, owned.state.generation)] = PublishedMarks.of(owned.state)
        self.result.count(owned)
        m.LEASE_OWNER.labels(name, self.id).set(0)
        release(self.r, name, self.id)
        log.info("worker %s handed model %r off at version %d", self.id, name, owned.state.version)

    def _maintain(self) -> None:
        """Renew leases, heartbeat, follow reconfigurations, hand off models outside the
        share, acquire free models in it."""
        listed = self.wanted if self.wanted is not None else list_models(self.r)
        names = self._share(listed)
        for renewal in self.keeper.take_renewals():
            if renewal.name not in self.owned:
                continue
            reason = renewal.verdict(self.owned[renewal.name].state.generation)
            if reason is None:
                continue
            # a reconfigured model is still leased to us: loaded afresh just below
            self._drop(
                renewal.name,
                reason,
                deleted=renewal.generation is None,
                unsaved_lost=not renewal.held,
            )
            if renewal.held and renewal.generation is None:
                release(self.r, renewal.name, self.id)
        existing = set(listed) if self.wanted is None else set(list_models(self.r))
        for gone in self.served - existing:  # deleted models, however they were let go
            self._drop(gone, "model deleted", deleted=True)
        mine = set(names)
        for name in [n for n in self.owned if n not in mine and n in existing]:
            self._hand_off(name)
        now_s = time.monotonic()
        for name in names:
            if name in self.owned or self.broken.get(name, 0.0) > now_s:
                continue
            if acquire(self.r, name, self.id, self.ttl_ms):
                try:
                    self._load(name)
                except STORE_UNAVAILABLE:
                    raise
                except (Exception, MemoryError) as exc:  # hostile or corrupt state in Redis
                    self._fail(name, exc)

    # ------------------------------------------------------------ applying
    def _apply_reads(
        self,
        got: dict[bytes, list[Any]],
        now_ms: int | None,
        generations: dict[bytes, Any],
        count: int,
    ) -> None:
        """Apply what one read of ``count`` entries per log returned (and any held-back
        entries) for every model.

        A model whose config generation changed (or that was deleted) since it was
        loaded is not applied: the next maintenance tick reloads or drops it. A
        model not read this time (``generations`` lacks it: its held-back entries
        fill a read already) applies from what it holds.
        """
        entries_read = events_before = events_after = 0
        for stream, owned in list(self.by_log.items()):
            st = owned.state
            new = got.get(stream)
            if not new and not st.pending:
                continue
            read = stream in generations
            generation = generations.get(stream)
            if read and (generation is None or as_generation(generation) != st.generation):
                deleted = generation is None
                self._drop(st.name, "model deleted" if deleted else "reconfigured", deleted)
                continue
            if new:
                st.read_id = new[-1][0].decode()
            entries = st.pending + new if st.pending and new else (new or st.pending)
            # the read returned everything there was: groups older than now are complete
            complete = read and now_ms is not None and (not new or len(new) < count)
            t0 = time.perf_counter()
            entries_read += len(new or ())
            events_before += int(st.totals["events"])
            try:
                applied = self._apply_and_flush(owned, entries, now_ms if complete else None)
            except STORE_UNAVAILABLE:
                raise
            except Exception as exc:  # a bug: this model stops, the others go on
                self._broke(owned, exc)
                applied = False
            finally:
                events_after += int(st.totals["events"])
            if not applied:
                continue
            m.UPDATE_LATENCY.labels(st.name).observe(time.perf_counter() - t0)
            if snapshot_due(st, self.settings, time.monotonic()):
                self._snapshot(owned)
        if entries_read:
            self._entry_events = max(1, (events_after - events_before) // entries_read)
            self.read_entries = self._read_size()

    def _apply_and_flush(self, owned: Owned, entries: list[Any], horizon: int | None) -> bool:
        """Apply ``entries`` (:meth:`_apply_bounded`) and write what they produced; False
        when the learner failed and the model was rolled back (:meth:`_roll_back`)."""
        try:
            owned.state.pending = self._apply_bounded(owned, entries, horizon)
        except LearnerFailed as failure:
            self._roll_back(owned, failure)
            return False
        flush(self.r, owned, self.settings.queries_maxlen)
        return True

    def _roll_back(self, owned: Owned, failure: LearnerFailed) -> None:
        """The learner failed on ``failure.entry_ids``
        (docs/architecture.md, "When the learner fails"): write what the entries before
        them produced, quarantine the entry (one) or cut the entries apart (several, so
        that the replay applies them one by one and finds the entry that fails), and
        reload the model from its last snapshot under the lease it still holds; the log
        is replayed from there."""
        st = owned.state
        name = st.name
        m.LEARNER_ERRORS.labels(name).inc()
        flush(self.r, owned, self.settings.queries_maxlen)
        if len(failure.entry_ids) == 1:
            owned.quarantine(failure.entry_ids[0], failure.reason)
            st.quarantined[failure.entry_ids[0]] = failure.reason
            log.error(
                "model %r: %s; entry quarantined, model replayed from its snapshot", name, failure
            )
        else:
            owned.record_cuts(failure.entry_ids)
            st.cuts.update(failure.entry_ids)
            log.warning("model %r: %s; applying them one by one from the snapshot", name, failure)
        self._drop(name, "the learner failed", count=False)
        try:  # the cuts and quarantine as written: not read back (they grow with failures)
            self._load(name, (st.cuts, st.quarantined))
        except STORE_UNAVAILABLE:
            raise
        except (Exception, MemoryError) as exc:
            self._fail(name, exc)
        # the work up to the last snapshot counts once: the replay from it counts the rest
        # again (the reloaded model's now or, when the reload failed, the model's next try)
        self.result.count(owned, upto=owned.snapshot_totals)

    def _read_size(self) -> int:
        """Entries per log for the next read: ``read_count``, fewer for entries of many
        events or bytes (:data:`READ_EVENTS`, :data:`READ_BYTES`)."""
        return max(
            1,
            min(
                self.settings.read_count,
                READ_EVENTS // self._entry_events,
                READ_BYTES // self._entry_bytes,
            ),
        )

    # ------------------------------------------------------------ reading
    def _read(
        self, reading: dict[bytes, Owned], count: int, block: int | None
    ) -> tuple[dict[bytes, list[Any]], int, list[Any], int]:
        """One read over ``reading``: the read sent ahead when it is the one to send now
        and it brought entries (or this read would not block anyway), else a fresh one.
        Returns what :func:`read_logs` does and the entries per log it asked for."""
        ahead = self._take_ahead(reading)
        if ahead is not None and (ahead[0] or block is None):
            return ahead
        got, now_ms, listed = read_logs(self.r, reading, count, block)
        return got, now_ms, listed, count

    def _send_ahead(
        self, reading: dict[bytes, Owned], got: dict[bytes, list[Any]], count: int
    ) -> None:
        """Send the next read before this one is applied, when this one was full (the log
        holds more): Redis prepares its reply while the worker learns.

        The next read is the same as the worker would send once this one is applied: the
        same logs, each after the last entry read now. It is used only if the next step
        does read exactly that (:meth:`_Ahead.matches`: no model was dropped, reloaded
        or held back in between), else dropped; entries are applied only from a read
        that is used, so what is applied does not depend on reading ahead.
        """
        if (
            not self._read_ahead
            or self.stopping
            or not any(len(entries) >= count for entries in got.values())
        ):
            return
        logs = []
        for stream, owned in reading.items():
            new = got.get(stream)
            logs.append((stream, owned, new[-1][0].decode() if new else owned.state.read_id))
        next_count = self._read_size()
        if self._ahead_conn is None:
            self._ahead_conn = self.r.connection_pool.get_connection()
        replies = send_read(self._ahead_conn, reading, [after for _, _, after in logs], next_count)
        self._ahead = _Ahead(logs, next_count, replies)

    def _take_ahead(
        self, reading: dict[bytes, Owned]
    ) -> tuple[dict[bytes, list[Any]], int, list[Any], int] | None:
        """The replies of the read sent ahead, if it matches ``reading`` (see
        :meth:`_send_ahead`); None when there is none or it does not match."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return None
        got, now_ms, listed = take_read(self._ahead_conn, ahead.replies)
        if not ahead.matches(reading):
            return None
        return got, now_ms, listed, ahead.count

    def _drop_ahead(self) -> None:
        """Forget a read sent ahead, closing its connection (its replies are not read)."""
        if self._ahead is not None:
            self._ahead = None
            self._ahead_conn.disconnect()

    def _apply_bounded(self, owned: Owned, entries: list[Any], horizon: int | None) -> list[Any]:
        """Apply ``entries`` in chunks for at most ``max_step_seconds`` (or until the worker
        is asked to stop); the entries left (held-back groups, then the unapplied rest)
        are returned for the next step.

        The first chunk is one entry; each later one at most doubles it, and fits
        the rest of the budget at the time per entry so far, so a model whose
        entries take seconds ends its step after one of them (and gets its
        snapshot), even when the first entries were cheap, while a fast one
        applies a read in a few calls. Cutting is deterministic: a chunk that is not the last is
        applied with no horizon, so a group at its end is held back and applied whole
        with the next chunk, exactly as one call would have formed it.
        """
        started = time.perf_counter()
        budget_end = started + self.settings.max_step_seconds
        owned.cut_short = False
        held: list[Any] = []
        start, size = 0, 1
        while start < len(entries):
            chunk = entries[start : start + size]
            start += len(chunk)
            last = start >= len(entries)
            held = owned.applier.apply(held + chunk if held else chunk, horizon if last else None)
            self.keeper.beat()
            now = time.perf_counter()
            if not last and (now >= budget_end or self.stopping):
                owned.cut_short = True
                return held + entries[start:]
            per_entry = (now - started) / start
            fits = int((budget_end - now) / max(per_entry, 1e-7))
            size = max(1, min(2 * size, STEP_CHUNK_MAX, fits))
        return held

    def _snapshot(self, owned: Owned) -> bool:
        st = owned.state
        try:
            snapshot_state(self.r, st, self.id, self.settings)
        except SnapshotFenced as exc:
            self._drop(st.name, str(exc), unsaved_lost=True)
            return False
        except STORE_UNAVAILABLE:
            raise
        except Exception as exc:  # e.g. a learner whose state cannot be written
            self._broke(owned, exc)
            return False
        self.result.snapshots += 1
        owned.snapshot_totals = dict(st.totals)
        m.SNAPSHOT_VERSION.labels(st.name).set(st.version)
        trim_log(self.r, owned, self.settings.stream_maxlen)
        self.history.snapshotted(self.r, st)
        return True

    # ------------------------------------------------------------ the loop
    def run(self, until_idle: bool = False, timeout: float | None = None) -> RunResult:
        """Serve until stopped; with ``until_idle``, return once every wanted model
        is owned and its log fully applied (or after ``timeout`` seconds).

        Returns the counts of this run. A clean return always snapshots the
        models with unsnapshotted entries and releases their leases.
        """
        single_thread_blas()
        started = time.perf_counter()
        cpu_started = time.process_time()
        deadline = None if timeout is None else time.monotonic() + timeout
        next_maintain = 0.0
        next_publish = 0.0
        block_ms = max(1, min(self.settings.block_ms, int(self.tick * 1000)))
        warn_unless_durable(read_durability(self.r), f"worker {self.id}")
        self.keeper.start()
        try:
            while not self.stopping:
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                try:
                    if now >= next_maintain:
                        self._maintain()
                        next_maintain = now + self.tick
                    if now >= next_publish:
                        publish(self.r, self.owned, self.settings.task_label_cap)
                        self.history.tick(self.r, self.owned)
                        next_publish = now + PUBLISH_EVERY
                    if self._step(until_idle, block_ms):
                        break
                except STORE_UNAVAILABLE as exc:
                    self._lost_connection(exc)
                    next_maintain = 0.0
        finally:
            self._shutdown()
            self.keeper.stop()
            # after the keeper's last heartbeat; else it drops out after the member lifetime
            with contextlib.suppress(StoreError):
                leave(self.r, self.id)
            self.result.seconds = time.perf_counter() - started
            self.result.cpu_seconds = time.process_time() - cpu_started
        return self.result

    def _step(self, until_idle: bool, block_ms: int) -> bool:
        """One read and its application; True when an ``until_idle`` run is done.

        A model whose last step ran out of time with a read's worth of entries left
        is not read again until it has applied them: the work of one step stays
        bounded, however slow the model.
        """
        self.keeper.beat()
        if not self.owned:
            if until_idle and self._all_wanted_owned():
                return True
            time.sleep(min(0.05, self.tick))
            return False
        count = self.read_entries
        pending = any(o.state.pending for o in self.owned.values())
        block: int | None = None if until_idle else (1 if pending else block_ms)
        # a model cut short by its time budget first applies what it holds; one that only
        # holds back a group is read, so that the next entries can complete the group
        reading = {
            s: o
            for s, o in self.by_log.items()
            if not (o.cut_short and len(o.state.pending) >= count)
        }
        got: dict[bytes, list[Any]] = {}
        now_ms: int | None = None
        generations: dict[bytes, Any] = {}
        if reading:
            got, now_ms, listed, count = self._read(reading, count, block)
            generations = dict(zip(reading, listed, strict=True))
            if got:  # the bytes per entry, from the first and last entry of each log
                sizes = [_entry_bytes(e[i]) for e in got.values() if e for i in (0, -1)]
                self._entry_bytes = max([1, *sizes])
            self._send_ahead(reading, got, count)
        elif self._ahead is not None:  # a read sent ahead serves the next step or none
            self._take_ahead(reading)
        if not got and not pending:
            if until_idle and self._all_wanted_owned():
                return True
            now = time.monotonic()
            for idle in list(self.owned.values()):
                if snapshot_due(idle.state, self.settings, now):
                    self._snapshot(idle)
            return False
        self._apply_reads(got, now_ms, generations, count)
        return False

    def _lost_connection(self, exc: Exception) -> None:
        """Redis went away: forget the models (their state is reloaded from the last
        snapshot once Redis is back, and the log replayed) and wait a little."""
        log.warning("worker %s lost Redis (%s); retrying", self.id, exc)
        self._drop_ahead()
        for name in list(self.owned):
            self._drop(name, "connection lost", unsaved_lost=True)
        deadline = time.monotonic() + 1.0
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(0.05)

    def _all_wanted_owned(self) -> bool:
        """Whether every wanted model that exists (and can be loaded) is owned."""
        existing = set(list_models(self.r))
        names = self.wanted if self.wanted is not None else self._share(sorted(existing))
        now = time.monotonic()
        return all(
            name in self.owned
            for name in names
            if name in existing and self.broken.get(name, 0.0) <= now
        )

    def _shutdown(self) -> None:
        """Snapshot every owned model, release the leases, publish the last metrics."""
        self._drop_ahead()
        try:
            for owned in list(self.owned.values()):
                if owned.outbox:
                    flush(self.r, owned, self.settings.queries_maxlen)
                if owned.state.entries_since_snapshot > 0:
                    self._snapshot(owned)
            publish(self.r, self.owned, self.settings.task_label_cap)
            self.history.tick(self.r, self.owned, force=True)
        except StoreError as exc:
            log.error("worker %s could not write its final snapshots: %s", self.id, exc)
        for name in list(self.owned):
            self.result.count(self.owned[name])
            self.keeper.disown(name)
            m.LEASE_OWNER.labels(name, self.id).set(0)
            with contextlib.suppress(StoreError):  # else the lease expires on its own
                release(self.r, name, self.id)
        self.owned.clear()
        self.by_log.clear()

    def close(self) -> None:
        """Close the Redis connections."""
        self._drop_ahead()
        if self._ahead_conn is not None:
            self.r.connection_pool.release(self._ahead_conn)
            self._ahead_conn = None
        self.keeper.close()
        self.r.close()


def _entry_bytes(entry: Any) -> int:
    """The bytes of a raw XREAD entry's field names and values (its share of a reply)."""
    return sum(map(len, entry[1]))
