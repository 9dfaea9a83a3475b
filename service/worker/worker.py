"""The worker: owns models through leases and applies their logs.

For every model it owns, the worker loads the latest snapshot (or the initial
state), replays the log from the snapshot's ``last_id`` and then follows it
with blocking ``XREAD`` calls over all its models' logs at once. No consumer
group is needed: the snapshot's ``last_id`` is the progress marker, and the
state is a deterministic function of the log (see :mod:`service.worker.apply`).

After each read it flushes the label requests and dead letters in one pipeline
and writes a snapshot every ``snapshot_every_entries`` entries or
``snapshot_every_seconds`` seconds; on a clean stop (SIGTERM/SIGINT or
:meth:`Worker.stop`) it finishes the read in hand, snapshots every model and
releases its leases. Every ``maintain`` tick it renews its leases, writes the
heartbeat, picks up new models, notices reconfigured or deleted ones and takes
over models whose lease expired.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import redis

from service import keys
from service import metrics as m
from service.codec import entry_id_tuple, parse_event_id
from service.models import get_model, initial_snapshot, list_models
from service.settings import Settings
from service.snapshot import SnapshotFenced, read_snapshot, write_snapshot
from service.worker.apply import Applier, Outbox
from service.worker.blas import single_thread_blas
from service.worker.lease import acquire, new_worker_id, release
from service.worker.outliers import outlier_alerts
from service.worker.state import ModelState

__all__ = ["RunResult", "Worker"]

log = logging.getLogger("omtl.worker")

#: How often (seconds) metrics are published and the log lag measured.
PUBLISH_EVERY = 0.5
DEAD_MAXLEN = 100_000
ALERTS_MAXLEN = 10_000
LABELLED_PRUNE_ABOVE = 50_000
#: Seconds before a worker tries again to load a model whose state could not be read.
RETRY_S = 30.0


@dataclass
class RunResult:
    """What one :meth:`Worker.run` did (counts over all models, this run only)."""

    entries: int = 0
    events: int = 0
    labelled_events: int = 0
    labels_applied: int = 0
    label_requests: int = 0
    dead_letters: int = 0
    snapshots: int = 0
    seconds: float = 0.0
    #: CPU time of this process during the run (steadier than ``seconds`` on a busy machine)
    cpu_seconds: float = 0.0
    models: list[str] = field(default_factory=list)

    @property
    def events_per_second(self) -> float:
        """Events applied per second of the run."""
        return self.events / self.seconds if self.seconds > 0 else 0.0


class _Owned:
    """A model this worker holds the lease of."""

    def __init__(self, state: ModelState, fetch: Any) -> None:
        self.state = state
        self.outbox = Outbox()
        self.applier = Applier(state, self.outbox, fetch)
        self.start_totals = dict(state.totals)
        self.lag = 0


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class Worker:
    """Applies the logs of the models it owns (see the module docstring).

    Parameters
    ----------
    settings : Settings
        Redis URL, intervals, lease lifetime, read sizes.
    models : sequence of str, optional
        The models to serve; None serves every model in ``omtl:models``
        (new ones are picked up while running).
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
        self.settings = settings
        self.wanted = list(models) if models is not None else None
        self.id = worker_id or new_worker_id()
        self.r = redis.Redis.from_url(settings.redis_url, decode_responses=False)
        # raw XREAD replies: the worker reads the flat field lists itself
        self.r.set_response_callback("XREAD", lambda response, **_: response)
        self.owned: dict[str, _Owned] = {}
        self.by_log: dict[bytes, _Owned] = {}
        self.broken: dict[str, float] = {}
        self.stopping = False
        self.ttl_ms = settings.lease_ttl_ms
        self.tick = min(0.5, settings.lease_ttl_ms / 3000.0)
        self.result = RunResult()

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
    def _load(self, name: str) -> None:
        config = get_model(self.r, name)
        if config is None:
            release(self.r, name, self.id)
            return
        snap = read_snapshot(self.r, name)
        if snap is None or snap.generation != config.generation:
            snap = initial_snapshot(name, config)
        state = ModelState(name, snap)
        last_query = self.r.xrevrange(keys.queries_key(name), count=1)
        if last_query:
            event = (last_query[0][1] or {}).get(b"event")
            if event is not None:
                state.queries_done_upto = parse_event_id(_text(event))
        last_dead = self.r.xrevrange(keys.dead_key(name), count=1)
        if last_dead:
            entry = (last_dead[0][1] or {}).get(b"entry")
            if entry is not None:
                state.dead_done_upto = entry_id_tuple(_text(entry))
        log_key = keys.log_key(name)

        def fetch(entry_id: str) -> list[Any] | None:
            found = self.r.xrange(log_key, entry_id, entry_id)
            if not found:
                return None
            flat: list[Any] = []
            for k, v in (found[0][1] or {}).items():
                flat.extend((k, v))
            return flat

        owned = _Owned(state, fetch)
        self.owned[name] = owned
        self.by_log[log_key.encode()] = owned
        m.LEASE_OWNER.labels(name, self.id).set(1)
        log.info(
            "worker %s owns model %r from version %d, last id %s",
            self.id,
            name,
            state.version,
            state.last_id,
        )

    def _drop(self, name: str, reason: str) -> None:
        owned = self.owned.pop(name, None)
        if owned is None:
            return
        self.by_log.pop(keys.log_key(name).encode(), None)
        self._count(owned)
        m.LEASE_OWNER.labels(name, self.id).set(0)
        log.warning("worker %s dropped model %r: %s", self.id, name, reason)

    def _maintain(self) -> None:
        """Renew leases, heartbeat, follow reconfigurations, acquire free models."""
        names = self.wanted if self.wanted is not None else list_models(self.r)
        owned = list(self.owned)
        if owned:
            now = str(time.time())
            with self.r.pipeline(transaction=False) as p:
                for name in owned:
                    p.eval(
                        "local c = redis.call('GET', KEYS[1]) "
                        "if c == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end "
                        "if not c then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end "
                        "return 0",
                        1,
                        keys.lease_key(name),
                        self.id,
                        str(self.ttl_ms),
                    )
                    p.hget(keys.config_key(name), "generation")
                    p.set(keys.heartbeat_key(name), now, ex=self.settings.heartbeat_ttl_s)
                replies = p.execute()
            for i, name in enumerate(owned):
                held, generation = replies[3 * i], replies[3 * i + 1]
                if not held:
                    self._drop(name, "lease lost to another worker")
                elif generation is None:
                    self._drop(name, "model deleted")
                    release(self.r, name, self.id)
                elif int(generation) != self.owned[name].state.generation:
                    # still leased to us: loaded afresh just below
                    self._drop(name, "model reconfigured; starting afresh")
        now_s = time.monotonic()
        for name in names:
            if name in self.owned or self.broken.get(name, 0.0) > now_s:
                continue
            if acquire(self.r, name, self.id, self.ttl_ms):
                try:
                    self._load(name)
                except ValueError as exc:  # an unreadable snapshot or config
                    log.error("cannot load model %r (retrying in %.0f s): %s", name, RETRY_S, exc)
                    self.broken[name] = now_s + RETRY_S
                    release(self.r, name, self.id)

    # ------------------------------------------------------------ applying
    def _read(self, block_ms: int | None) -> tuple[dict[bytes, list[Any]], int, list[Any]]:
        """One XREAD over every owned log, then the server's time (ms) and each model's
        config generation, all in one round trip."""
        streams = list(self.by_log)
        ids = [o.state.read_id for o in self.by_log.values()]
        args: list[Any] = ["XREAD", "COUNT", self.settings.read_count]
        if block_ms is not None:
            args += ["BLOCK", block_ms]
        args += ["STREAMS", *streams, *ids]
        with self.r.pipeline(transaction=False) as p:
            p.execute_command(*args)
            p.time()
            for owned in self.by_log.values():
                p.hget(keys.config_key(owned.state.name), "generation")
            reply, (seconds, micros), *generations = p.execute()
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        if not reply:
            return {}, now_ms, generations
        pairs = reply.items() if isinstance(reply, dict) else reply  # RESP3 / RESP2
        return {bytes(stream): entries for stream, entries in pairs}, now_ms, generations

    def _apply_reads(
        self, got: dict[bytes, list[Any]], now_ms: int, generations: list[Any]
    ) -> None:
        """Apply what one read returned (and any held-back entries) for every model.

        A model whose config generation changed (or that was deleted) since it was
        loaded is not applied: the next maintenance tick reloads or drops it.
        """
        count = self.settings.read_count
        for (stream, owned), generation in zip(list(self.by_log.items()), generations):
            st = owned.state
            new = got.get(stream)
            if not new and not st.pending:
                continue
            if generation is None or int(generation) != st.generation:
                self._drop(st.name, "model deleted or reconfigured")
                continue
            if new:
                st.read_id = new[-1][0].decode()
            entries = st.pending + new if st.pending and new else (new or st.pending)
            # the read returned everything there was: groups older than now are complete
            horizon = now_ms if not new or len(new) < count else None
            t0 = time.perf_counter()
            st.pending = owned.applier.apply(entries, horizon)
            self._flush(owned)
            m.UPDATE_LATENCY.labels(st.name).observe(time.perf_counter() - t0)
            if self._due(owned, time.monotonic()):
                self._snapshot(owned)

    def _flush(self, owned: _Owned) -> None:
        st = owned.state
        alerts = outlier_alerts(st)
        if not owned.outbox and not alerts:
            return
        name = st.name
        with self.r.pipeline(transaction=False) as p:
            for fields in owned.outbox.requests:
                p.xadd(
                    keys.queries_key(name),
                    fields,  # type: ignore[arg-type]
                    maxlen=self.settings.queries_maxlen,
                    approximate=True,
                )
            for fields in owned.outbox.dead:
                p.xadd(keys.dead_key(name), fields, maxlen=DEAD_MAXLEN, approximate=True)  # type: ignore[arg-type]
            for fields in alerts:
                p.xadd(keys.alerts_key(name), fields, maxlen=ALERTS_MAXLEN, approximate=True)  # type: ignore[arg-type]
            p.execute()
        owned.outbox.clear()

    def _snapshot(self, owned: _Owned) -> bool:
        st = owned.state
        if len(st.labelled) > LABELLED_PRUNE_ABOVE:
            first = self.r.xrange(keys.log_key(st.name), count=1)
            if first:
                st.forget_labelled_before(entry_id_tuple(_text(first[0][0])))
        snap = st.to_snapshot()
        try:
            st.version = write_snapshot(self.r, st.name, snap, owner=self.id)
        except SnapshotFenced as exc:
            self._drop(st.name, str(exc))
            return False
        st.snapshot_created = snap.created
        st.entries_since_snapshot = 0
        st.last_snapshot_at = time.monotonic()
        self.result.snapshots += 1
        m.SNAPSHOT_VERSION.labels(st.name).set(st.version)
        return True

    def _due(self, owned: _Owned, now: float) -> bool:
        st = owned.state
        if st.entries_since_snapshot <= 0:
            return False
        return (
            st.entries_since_snapshot >= self.settings.snapshot_every_entries
            or now - st.last_snapshot_at >= self.settings.snapshot_every_seconds
        )

    # ------------------------------------------------------------ metrics
    def _publish(self) -> None:
        lags: list[Any] = []
        if self.owned:
            with self.r.pipeline(transaction=False) as p:
                for name in self.owned:
                    p.xinfo_stream(keys.log_key(name))
                try:
                    lags = p.execute(raise_on_error=False)
                except redis.ResponseError:
                    lags = []
        for i, (name, owned) in enumerate(list(self.owned.items())):
            st = owned.state
            counters = st.counters()
            for cname, metric in (
                ("events", m.EVENTS),
                ("labels", m.LABELS),
                ("queries", m.LABEL_REQUESTS),
                ("mistakes", m.ONLINE_MISTAKES),
            ):
                published = st.published[cname]
                values = counters[cname].tolist()
                published.extend([0] * (len(values) - len(published)))
                for t, value in enumerate(values):
                    delta = value - published[t]
                    if delta > 0:
                        label = m.task_label(
                            st.task_names[t] if t < len(st.task_names) else f"#{t}",
                            st.metric_tasks,
                            self.settings.task_label_cap,
                        )
                        metric.labels(name, label).inc(delta)
                        published[t] = value
            dead = st.totals["dead_letters"] - st.published_dead
            if dead > 0:
                m.DEAD_LETTERS.labels(name).inc(dead)
                st.published_dead = st.totals["dead_letters"]
            entries = st.totals["entries"] - st.published_entries
            if entries > 0:
                m.WORKER_ENTRIES.labels(name).inc(entries)
                st.published_entries = st.totals["entries"]
            m.SNAPSHOT_AGE.labels(name).set(max(0.0, time.time() - st.snapshot_created))
            m.SNAPSHOT_VERSION.labels(name).set(st.version)
            info = lags[i] if i < len(lags) else None
            if isinstance(info, dict):
                added = info.get("entries-added", info.get(b"entries-added"))
                if added is not None:
                    owned.lag = max(0, int(added) - st.totals["entries"])
                    m.LOG_LAG.labels(name).set(owned.lag)

    def _count(self, owned: _Owned) -> None:
        """Add a model's work in this run to the result (once, when it is let go)."""
        res, now, start = self.result, owned.state.totals, owned.start_totals
        res.entries += now["entries"] - start["entries"]
        res.events += now["events"] - start["events"]
        res.labelled_events += now["labelled_events"] - start["labelled_events"]
        res.labels_applied += now["labels_applied"] - start["labels_applied"]
        res.label_requests += now["label_requests"] - start["label_requests"]
        res.dead_letters += now["dead_letters"] - start["dead_letters"]
        owned.start_totals = dict(now)
        if owned.state.name not in res.models:
            res.models.append(owned.state.name)

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
                        self._publish()
                        next_publish = now + PUBLISH_EVERY
                    if self._step(until_idle, block_ms):
                        break
                except (redis.ConnectionError, redis.TimeoutError) as exc:
                    self._lost_connection(exc)
                    next_maintain = 0.0
        finally:
            self._shutdown()
            self.result.seconds = time.perf_counter() - started
            self.result.cpu_seconds = time.process_time() - cpu_started
        return self.result

    def _step(self, until_idle: bool, block_ms: int) -> bool:
        """One read and its application; True when an ``until_idle`` run is done."""
        if not self.owned:
            if until_idle and self._all_wanted_owned():
                return True
            time.sleep(min(0.05, self.tick))
            return False
        pending = any(o.state.pending for o in self.owned.values())
        block: int | None = None if until_idle else (1 if pending else block_ms)
        got, now_ms, generations = self._read(block)
        if not got and not pending:
            if until_idle and self._all_wanted_owned():
                return True
            now = time.monotonic()
            for idle in list(self.owned.values()):
                if self._due(idle, now):
                    self._snapshot(idle)
            return False
        self._apply_reads(got, now_ms, generations)
        return False

    def _lost_connection(self, exc: Exception) -> None:
        """Redis went away: forget the models (their state is reloaded from the last
        snapshot once Redis is back, and the log replayed) and wait a little."""
        log.warning("worker %s lost Redis (%s); retrying", self.id, exc)
        for name in list(self.owned):
            self._drop(name, "connection lost")
        deadline = time.monotonic() + 1.0
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(0.05)

    def _all_wanted_owned(self) -> bool:
        """Whether every wanted model that exists (and can be loaded) is owned."""
        existing = set(list_models(self.r))
        names = self.wanted if self.wanted is not None else existing
        now = time.monotonic()
        return all(
            name in self.owned
            for name in names
            if name in existing and self.broken.get(name, 0.0) <= now
        )

    def _shutdown(self) -> None:
        """Snapshot every owned model, release the leases, publish the last metrics."""
        try:
            for owned in list(self.owned.values()):
                if owned.outbox:
                    self._flush(owned)
                if owned.state.entries_since_snapshot > 0:
                    self._snapshot(owned)
            self._publish()
        except redis.RedisError as exc:
            log.error("worker %s could not write its final snapshots: %s", self.id, exc)
        for name in list(self.owned):
            self._count(self.owned[name])
            m.LEASE_OWNER.labels(name, self.id).set(0)
            with contextlib.suppress(redis.RedisError):  # else the lease expires on its own
                release(self.r, name, self.id)
        self.owned.clear()
        self.by_log.clear()

    def close(self) -> None:
        """Close the Redis connections."""
        self.r.close()
