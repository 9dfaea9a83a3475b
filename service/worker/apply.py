"""Applying log entries to a model: the worker's deterministic state machine.

For each entry, in log order (docs/architecture.md, "Applying log entries"):

* event: predict (the learner's decision before learning) and count it; with
  a label, count the online mistake and learn; without one, ask ``query_one``
  and, on True, emit a label request;
* batch: labelled rows go through ``learner.score_and_learn_many`` run by run
  (consecutive labelled rows: the learners' exact batch path); unlabelled rows
  are handled one by one as single events; consecutive fully labelled batch
  entries are merged into one learner call where that is exact
  (:meth:`Applier._apply_run`);
* multiview round (``k=v``, multiview learners only): the same as an event,
  with the learner's round methods (``decision_views``,
  ``score_and_learn_views``) on the views of every task (a task the round does
  not carry is the zero vector);
* label: read the event back (the in-memory cache of recent unlabelled events,
  else XRANGE on the log), apply the label at most once, count it;
* anything that cannot be decoded or applied goes to the dead-letter list with
  the reason, and the next entry is applied;
* when the learner raises anything but ``ValueError`` (its promise that nothing
  changed), the state may hold part of the step: :class:`LearnerFailed` leaves
  ``apply`` with the entries of the failing call, and the worker rolls the model
  back to its snapshot; an entry the learner fails on alone is *quarantined*,
  dead-lettered by every later replay without reaching the learner
  (docs/architecture.md, "When the learner fails").

The state changes depend only on the log, the snapshot it started from and the
learner's own generator, so a replay from a snapshot reproduces them exactly.
Writes to Redis (label requests, dead letters) are collected in an
:class:`Outbox` that the worker flushes in one pipeline per read.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from learners import Vec, as_vector, query_probability_reporter
from service.store import StoreError
from service.store.codec import (
    BatchEvent,
    CodecError,
    Event,
    Label,
    MultiviewEvent,
    decode_flat,
    entry_id_tuple,
    parse_event_id,
    read_binary_event,
    read_labelled_batch,
    split_event_id,
)
from service.worker.outbox import Outbox, dead_letter_fields
from service.worker.state import ModelState

__all__ = ["GROUP_MAX", "GROUP_MIN", "Applier", "LearnerFailed"]

_F4 = np.dtype("<f4")
#: Fetches the raw field list of one log entry by id (None when it is gone).
Fetch = Callable[[str], Sequence[Any] | None]
#: Largest group of labelled single events learned in one batch call: a run of such
#: events within one millisecond is cut into chunks of this size from its start.
GROUP_MAX = 100
#: Smaller groups are applied event by event: below this size one batch call costs
#: more than the per-event calls (measured with cmtl, K = d = 100).
GROUP_MIN = 4
#: A labelled single event waiting in a group: entry id, raw fields, task index, x32, y.
_Grouped = tuple[bytes, Sequence[Any], int, bytes, float]
#: Records (durably) that a group starts at this entry id.
RecordCut = Callable[[bytes], None]
#: A run of labelled batch entries is applied once its rows hold this many bytes of x
#: (the learner call then covers ~40,000 rows of d = 100; the buffer stays cache-sized).
RUN_MAX_BYTES = 16 << 20
#: A fully labelled batch entry waiting in a run: entry id, raw fields, task indices,
#: X32 bytes, y32 bytes.
_Batched = tuple[bytes, Sequence[Any], np.ndarray, bytes, bytes]
#: A label request to emit: (event id, task index, score, ref, probability text, event key).
_Request = tuple[str, int, float, Any, str, tuple[int, int, int]]


class _Dead(Exception):
    """An entry that cannot be applied; the message is the reason."""


class LearnerFailed(Exception):
    """The learner raised an error other than ``ValueError`` while applying the entries
    ``entry_ids`` (one learner call, in log order), or an entry failed after part of it
    was applied: the model's state may hold part of the call.

    The worker rolls the model back to its last snapshot and replays the log: one
    entry is quarantined first (left out by every replay), several are first cut
    apart, so that the replay applies them one by one and finds the entry that fails.
    """

    def __init__(self, entry_ids: Sequence[bytes], error: BaseException) -> None:
        self.entry_ids = list(entry_ids)
        #: the learner's error, as the dead letter of a quarantined entry gives it
        self.reason = f"{type(error).__name__}: {error}"
        first = self.entry_ids[0].decode()
        where = first if len(self.entry_ids) == 1 else f"{len(self.entry_ids)} entries from {first}"
        super().__init__(f"the learner failed on {where}: {self.reason}")


#: The instance of a view a multiview round does not carry: the zero vector.
_NO_VIEW = (np.zeros(0, dtype=np.int64), np.zeros(0))


@dataclass(slots=True)
class _Round:
    """A multiview round waiting for its label: its task and its views by task index."""

    task: int
    views: dict[int, Any]


class Applier:
    """Applies log entries to one :class:`ModelState` (see the module docstring).

    Labelled single events go through the learner's ``score_and_learn_one``
    (test-then-train with one validation of x), runs of them through
    ``score_and_learn_many``.
    """

    def __init__(
        self, state: ModelState, outbox: Outbox, fetch: Fetch, record_cut: RecordCut | None = None
    ) -> None:
        self.state = state
        self.outbox = outbox
        self.fetch = fetch
        self.record_cut = record_cut
        self._replaying_queries = False
        #: reused buffer the rows of a run are copied into (no fresh pages per run)
        self._xbuf = bytearray()
        self.rebind()

    def rebind(self) -> None:
        """Cache the learner's methods and flags (call after the learner changes)."""
        learner = self.state.learner
        self.learner = learner
        self.d = learner.n_features
        self.classification = learner.label_kind == "classification"
        # Declared capabilities (docs/architecture.md, "Label requests"): a learner
        # that is not active queries every unlabelled event.
        self.passive = not learner.is_active
        self.reports_probability = query_probability_reporter(learner) is not None
        # Consecutive labelled batch entries merge into one learner call only where that
        # gives bit-identical results (see :meth:`_apply_run`).
        self.merge_batches = self.classification and bool(
            getattr(learner, "exact_batch_merge", False)
        )
        # A run of one entry is read in place from the entry's bytes where the learner
        # reads read-only float32 rows without a copy (see :meth:`_apply_run`).
        self.rows_in_place = bool(getattr(learner, "reads_readonly_rows", False))
        # A single labelled event is learned as a one-row batch unless the learner's
        # per-event call is bit for bit its batch path: a group of such events (one batch
        # call) and the same events alone then give the same state, whatever the reads
        # made of the groups.
        self.singles_as_batches = not learner.per_event_is_batch()

    # ------------------------------------------------------------ helpers
    def _check_y(self, y: float) -> float:
        if self.classification:
            if y != 1.0 and y != -1.0:
                raise _Dead(f"label y must be -1 or +1 for a classification model, got {y!r}")
        elif not math.isfinite(y):
            raise _Dead(f"target y must be finite, got {y!r}")
        return y

    def _score_and_learn(self, x: Any, y: float, t: int) -> float:
        if not self.singles_as_batches:
            return self.learner.score_and_learn_one(x, y, t)
        rows: Any
        if type(x) is np.ndarray and x.ndim == 1:
            # a dense row (binary or JSON) as a group of such events reads it, zeros and
            # all; the learner's batch call validates it. A one-row CSR batch would cost
            # 2-3 times as much (45-65 us more per event for adaptive-auto, amlc-adaptive).
            rows = x.reshape(1, -1)
        else:
            # one canonical row, whatever other form x came in (sparse JSON, a remembered Vec)
            v = x if isinstance(x, Vec) else as_vector(x, self.d)
            if v.idx is None:
                rows = v.val.reshape(1, -1)
            else:
                # a batch of one canonical vector: the CSR row it stands for, without
                # building one here (13 us) for a learner that reads the vector itself
                rows = [v]
        y_row, t_row = np.full(1, float(y)), np.full(1, t, dtype=np.int64)
        return float(self.learner.score_and_learn_many(rows, y_row, t_row)[0])

    def _decide(self, x: Any, t: int) -> tuple[float, str, bool]:
        """The learner's score of an unlabelled ``x``, its query probability as the label
        request writes it ("" when not reported), and whether to ask for the label: one
        ``decide_and_query`` call (the same as ``decision_one``, ``query_probability``
        and ``query_one`` in this order)."""
        if self.passive:
            return self.learner.decision_one(x, t), "", True
        score, p, asked = self.learner.decide_and_query(x, t, probability=self.reports_probability)
        return score, ("" if p is None else repr(float(p))), asked

    def _unlabelled_event(
        self, event_id: str, t: int, x: Any, ref: Any, key: tuple[int, int, int] | None = None
    ) -> None:
        """An unlabelled event (``x`` validated): score it, count the prediction, emit a
        label request where the learner asks, remember ``x`` for its label."""
        st = self.state
        s, p, asked = self._decide(x, t)
        st.single["events"][t] += 1
        st.single["predictions"][t] += 1
        if asked:
            self._emit_request(event_id, t, s, ref, p, key)
        st.remember(event_id, (t, x))

    def _request_round(
        self, event_id: str, t: int, round_views: Any, score: float, ref: Any
    ) -> None:
        """Ask the learner whether to query the K views of a round; on True emit a label
        request (a single event's decision comes from :meth:`_decide`)."""
        if not self.passive and not self.learner.query_views(round_views, t):  # type: ignore[attr-defined]
            return
        self._emit_request(event_id, t, score, ref, "")

    def _emit_request(
        self,
        event_id: str,
        t: int,
        score: float,
        ref: Any,
        p: str,
        key: tuple[int, int, int] | None = None,
    ) -> None:
        """Count a label request and emit it (unless a replay already did); ``key`` is
        ``parse_event_id(event_id)`` where the caller has it."""
        if key is None:
            key = parse_event_id(event_id)
        self._emit_requests([(event_id, t, score, ref, p, key)])

    def _emit_requests(self, requests: Iterable[_Request]) -> None:
        """:meth:`_emit_request` of each request in order, stamped with one time."""
        st = self.state
        queries = st.single["queries"]
        names = st.task_names
        out = self.outbox.requests
        ts = str(int(time.time() * 1000))
        for event_id, t, score, ref, p, key in requests:
            queries[t] += 1
            st.totals["label_requests"] += 1
            st.note_request(key)
            if self._replaying_queries and key <= st.queries_done_upto:
                continue
            self._replaying_queries = False
            if isinstance(ref, bytes):
                ref = ref.decode("utf-8", "replace")
            out.append(
                {
                    "event": event_id,
                    "task": names[t],
                    "score": repr(score),
                    "p": p,
                    "ref": "" if ref is None else str(ref),
                    "ts": ts,
                }
            )

    def _dead(self, entry_id: str, reason: str, flat: Sequence[Any]) -> None:
        st = self.state
        st.totals["dead_letters"] += 1
        if st.dead_done_upto >= (0, 0) and entry_id_tuple(entry_id) <= st.dead_done_upto:
            return
        self.outbox.dead.append(dead_letter_fields(entry_id, reason, flat))

    # ------------------------------------------------------------ entries
    def apply(self, entries: Sequence[Any], horizon_ms: int | None = None) -> list[Any]:
        """Apply raw XREAD entries ``[id, [field, value, ...]]`` in log order.

        Consecutive labelled single events (binary ``x32``, known task, read by
        :func:`service.store.codec.read_binary_event`) with the same millisecond
        in their entry id form a *group* (cut into chunks of :data:`GROUP_MAX`
        from its start), applied with one ``score_and_learn_many`` call (groups
        smaller than :data:`GROUP_MIN` with the per-event path).
        Groups depend on the log alone, so a replay forms the same groups. A
        group at the end of ``entries`` may still grow: it is applied only when
        its millisecond is below ``horizon_ms`` (the server time after a read
        that returned everything there was), and otherwise returned unapplied,
        to be passed again, in front of the next entries.

        The server clock proves a group complete only for ids Redis generated:
        a producer giving explicit ids may add an entry of the same millisecond
        later. When the first entry after a group applied at the end of a read
        would have joined that group, its id is recorded as a *cut*
        (``state.cuts``, kept in Redis by ``record_cut`` before it is applied):
        a group never spans a cut, so a replay that reads both parts at once
        forms the same groups, bit for bit.
        """
        st = self.state
        self._replaying_queries = st.queries_done_upto >= (0, 0, -1)
        tindex = st.task_index
        valid_y = self._valid_y
        x_bytes = 4 * self.d
        n_events = 0
        run_bytes = 0
        group: list[_Grouped] = []
        group_ms = b""
        cuts = st.cuts
        closed, st.closed_ms = st.closed_ms, None
        run: list[_Batched] = []
        merge = self.merge_batches
        quarantined = st.quarantined
        for eid_b, flat in entries:
            after_closed, closed = closed, None
            if quarantined and eid_b in quarantined:
                if group:
                    n_events += self._apply_group(group)
                    group = []
                if run:
                    n_events += self._apply_run(run, run_bytes)
                    run, run_bytes = [], 0
                self._leave_out(eid_b, flat)
                continue
            batch = self._labelled_batch(flat, x_bytes)
            if batch is not None:
                if group:
                    n_events += self._apply_group(group)
                    group = []
                if run and eid_b in cuts:  # cut apart after the learner failed on a run
                    n_events += self._apply_run(run, run_bytes)
                    run, run_bytes = [], 0
                run.append((eid_b, flat, *batch))
                run_bytes += len(batch[1])
                if not merge or run_bytes >= RUN_MAX_BYTES:
                    n_events += self._apply_run(run, run_bytes)
                    run, run_bytes = [], 0
                continue
            if run:
                n_events += self._apply_run(run, run_bytes)
                run, run_bytes = [], 0
            fast = read_binary_event(flat, x_bytes)
            t = None if fast is None else tindex.get(fast[0])
            if t is not None and fast is not None:
                _, x32, y, ref = fast
                if y is None:
                    if group:
                        n_events += self._apply_group(group)
                        group = []
                    n_events += self._guarded(eid_b, flat, self._unlabelled, eid_b, t, x32, ref)
                    continue
                if valid_y(y):
                    ms = eid_b[: eid_b.index(b"-")]
                    if group and (ms != group_ms or eid_b in cuts):
                        n_events += self._apply_group(group)
                        group = []
                    elif not group and ms == after_closed and eid_b not in cuts:
                        self._cut(eid_b)
                    group_ms = ms
                    group.append((eid_b, flat, t, x32, y))
                    if len(group) == GROUP_MAX:  # a full chunk is complete whatever follows
                        n_events += self._apply_group(group)
                        group = []
                    continue
            if group:
                n_events += self._apply_group(group)
                group = []
            n_events += self._guarded(eid_b, flat, self._generic, eid_b.decode(), flat)
        if run:
            n_events += self._apply_run(run, run_bytes)
        tail: list[Any] = []
        if group:
            if horizon_ms is not None and int(group_ms) < horizon_ms:
                n_events += self._apply_group(group)
                st.closed_ms = group_ms
            else:
                tail = [[g[0], g[1]] for g in group]
        applied = len(entries) - len(tail)
        if applied:
            st.last_id = entries[applied - 1][0].decode()
            st.totals["entries"] += applied
            st.entries_since_snapshot += applied
        st.totals["events"] += n_events
        return tail

    def _leave_out(self, eid_b: bytes, flat: Sequence[Any]) -> None:
        """A quarantined entry: dead-lettered with the learner's error, not applied; the
        model is snapshotted soon after (a learner failing again replays less)."""
        reason = self.state.quarantined[eid_b]
        self._dead(eid_b.decode(), f"the learner failed on this entry: {reason}", flat)
        self.state.snapshot_soon = True

    def _cut(self, entry_id: bytes) -> None:
        """Start a new group at ``entry_id``, durably (see :meth:`apply`)."""
        if self.record_cut is not None:
            self.record_cut(entry_id)
        self.state.cuts.add(entry_id)

    def _valid_y(self, y: float) -> bool:
        """Whether a label fits the model's kind (else the full path dead-letters it)."""
        if self.classification:
            return y == 1.0 or y == -1.0
        return math.isfinite(y)

    def _guarded(
        self, eid_b: bytes, flat: Sequence[Any], step: Callable[..., int], *args: Any
    ) -> int:
        """Run ``step(*args)``; an entry it cannot apply goes to the dead letters (0 events).
        Any error but ``ValueError`` (or ours) may have left part of the entry applied: it
        leaves as :class:`LearnerFailed`."""
        try:
            return step(*args)
        except _Dead as exc:
            self._dead(eid_b.decode(), str(exc), flat)
        except (StoreError, LearnerFailed):
            raise
        except ValueError as exc:  # refused before any change
            self._dead(eid_b.decode(), f"{type(exc).__name__}: {exc}", flat)
        except Exception as exc:
            raise LearnerFailed([eid_b], exc) from exc
        return 0

    def _unlabelled(self, eid_b: bytes, t: int, x32: bytes, ref: bytes | None) -> int:
        """An unlabelled single event read by the fast path: predict, maybe ask for its label.
        Its id is one Redis gave the entry (``<ms>-<seq>``), so its key is read by a split
        rather than :func:`~service.store.codec.parse_event_id`'s pattern."""
        ms, _, seq = eid_b.partition(b"-")
        key = (int(ms), int(seq), -1)
        self._unlabelled_event(eid_b.decode(), t, np.frombuffer(x32, _F4), ref, key)
        return 1

    def _apply_group(self, group: list[_Grouped]) -> int:
        """Apply a group of labelled single events (see :meth:`apply`); returns its size."""
        n = len(group)
        if n >= GROUP_MIN:
            X = np.frombuffer(b"".join([g[3] for g in group]), _F4).reshape(n, self.d)
            if np.isfinite(X).all():
                tasks = np.fromiter([g[2] for g in group], np.int64, n)
                y = np.fromiter([g[4] for g in group], np.float64, n)
                try:
                    scores = self.learner.score_and_learn_many(X, y, tasks)
                except ValueError:
                    pass  # the batch was refused before any change: apply row by row
                except Exception as exc:
                    raise LearnerFailed([g[0] for g in group], exc) from exc
                else:
                    self._count_labelled(scores, y, tasks)
                    return n
        for eid_b, flat, t, x32, y_one in group:
            try:
                x = np.frombuffer(x32, _F4)
                s = self._score_and_learn(x, y_one, t)
            except ValueError as exc:  # refused before any change
                self._dead(eid_b.decode(), f"{type(exc).__name__}: {exc}", flat)
                n -= 1
                continue
            except Exception as exc:
                raise LearnerFailed([eid_b], exc) from exc
            self._count_arrived_labelled(t, s, y_one)
        return n

    def _labelled_batch(
        self, flat: Sequence[Any], x_bytes: int
    ) -> tuple[np.ndarray, bytes, bytes] | None:
        """``(task indices, X32 bytes, y32 bytes)`` of a batch entry the fast reader takes
        (:func:`service.store.codec.read_labelled_batch`) whose tasks are all known, else
        None (the entry then takes the full decode)."""
        fast = read_labelled_batch(flat, x_bytes)
        if fast is None:
            return None
        n, task, names, xb, yb = fast
        tindex = self.state.task_index
        if task is not None:
            t = tindex.get(task)
            return None if t is None else (np.full(n, t, dtype=np.int64), xb, yb)
        assert names is not None
        tasks = self.state.task_lookup.indices(names, n, self.state.task_names)
        if tasks is not None:
            return tasks, xb, yb
        try:  # not in the plain form the compiled look-up reads (service/worker/task_lookup.py)
            parsed = orjson.loads(names)
            if type(parsed) is not list or len(parsed) != n:
                return None
            tasks = np.fromiter(map(self.state.task_by_name.__getitem__, parsed), np.int64, n)
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return None  # not JSON, not a list of names, or a task not seen yet
        return tasks, xb, yb

    def _apply_run(self, run: list[_Batched], x_bytes: int) -> int:
        """Apply a run of consecutive labelled batch entries with one learner call.

        Only learners declaring ``exact_batch_merge`` (their batch results do not depend
        on where a stream is cut into batches) get runs longer than one entry, so the
        state is bit for bit that of applying the entries one by one, and does not
        depend on how the log was read. When the call refuses a run of several entries
        (``ValueError``, a bad row: nothing changed), every entry is applied on its own,
        with full validation; a single entry the learner refuses is dead-lettered, as it
        would be. Any other error leaves as :class:`LearnerFailed` with the run's entries.
        An entry in ``state.cuts`` starts a run of its own (the worker cuts a failed run
        apart that way).

        A merged run holds only rows labelled -1 or +1 (a merged call would refuse the
        run otherwise): that is checked here, once for the run; an entry with another
        label takes the full decode in its place (:meth:`_split_run`).
        """
        y = np.frombuffer(b"".join([r[4] for r in run]), _F4).astype(np.float64)
        if self.merge_batches and not (np.abs(y) == 1.0).all():
            return self._split_run(run)
        if self.merge_batches and not (len(run) == 1 and self.rows_in_place):
            X = self._rows_in_buffer(run, x_bytes)
        else:  # one entry, read in place from its bytes (a learner may keep rows of it)
            X = np.frombuffer(run[0][3], _F4).reshape(-1, self.d)
        tasks = run[0][2] if len(run) == 1 else np.concatenate([r[2] for r in run])
        try:
            scores = self.learner.score_and_learn_many(X, y, tasks)
        except ValueError:  # refused before any change: each entry with full validation
            n = 0
            for eid_b, flat, *_ in run:
                n += self._guarded(eid_b, flat, self._generic, eid_b.decode(), flat)
            return n
        except Exception as exc:
            raise LearnerFailed([r[0] for r in run], exc) from exc
        self._count_labelled(scores, y, tasks)
        return int(y.shape[0])

    def _split_run(self, run: list[_Batched]) -> int:
        """A run with some entry whose labels are not all -1 or +1: its entries in log order,
        each maximal stretch of entries labelled -1 or +1 merged as a run, every other entry
        taking the full decode (it is applied, or dead-lettered, on its own). The learner
        merges exactly, so the stretches give the state of one call per entry."""
        n, good, good_bytes = 0, [], 0
        for entry in run:
            if (np.abs(np.frombuffer(entry[4], _F4)) == 1.0).all():
                good.append(entry)
                good_bytes += len(entry[3])
                continue
            if good:
                n += self._apply_run(good, good_bytes)
                good, good_bytes = [], 0
            eid_b, flat = entry[0], entry[1]
            n += self._guarded(eid_b, flat, self._generic, eid_b.decode(), flat)
        if good:
            n += self._apply_run(good, good_bytes)
        return n

    def _rows_in_buffer(self, run: list[_Batched], x_bytes: int) -> np.ndarray:
        """The rows of a run, copied into the reused buffer (writable float32, no fresh
        pages): the learner reads them in place, without a float64 copy."""
        if len(self._xbuf) < x_bytes:
            self._xbuf = bytearray(x_bytes)
        view, at = memoryview(self._xbuf), 0
        for r in run:
            view[at : at + len(r[3])] = r[3]
            at += len(r[3])
        view.release()
        return np.frombuffer(self._xbuf, _F4, count=x_bytes // 4).reshape(-1, self.d)

    def _count_labelled(self, scores: np.ndarray, y: np.ndarray, tasks: np.ndarray) -> None:
        """Counters of labelled rows learned through the batch path (added up later)."""
        st = self.state
        wrong = (scores >= 0.0) != (y > 0.0) if self.classification else None
        st.deferred.append((tasks, wrong))
        if not self.classification:
            st.count_errors(tasks, scores, y)
        st.totals["labelled_events"] += int(tasks.shape[0])

    def _generic(self, entry_id: str, flat: Sequence[Any]) -> int:
        """Any entry: full decode and validation. Returns the number of events applied."""
        try:
            entry = decode_flat(entry_id, flat, n_features=self.d)
        except CodecError as exc:
            raise _Dead(str(exc)) from None
        if isinstance(entry, Event):
            self._event(entry)
            return 1
        if isinstance(entry, BatchEvent):
            return self._batch(entry)
        if isinstance(entry, MultiviewEvent):
            self._multiview(entry)
            return 1
        self._label(entry)
        return 0

    def _round_views(self, views: dict[int, Any]) -> list[Any]:
        """The K instances of a round: the given views, the zero vector for the others."""
        return [views.get(j, _NO_VIEW) for j in range(self.learner.n_tasks)]

    def _check_multiview(self) -> None:
        if not getattr(self.learner, "multiview", False):
            raise _Dead(
                f"a multiview round needs a multiview learner; {type(self.learner).__name__} "
                "takes single events (x, task)"
            )

    def _multiview(self, ev: MultiviewEvent) -> None:
        """A multiview round (docs/architecture.md, "Applying log entries")."""
        self._check_multiview()
        st = self.state
        if ev.y is not None:
            self._check_y(ev.y)
        t = st.task_for(ev.task)
        views = {st.task_for(name): x for name, x in ev.views.items()}
        learner: Any = self.learner
        round_views = self._round_views(views)
        if ev.y is None:
            s = learner.decision_views(round_views, t)
            st.single["events"][t] += 1
            st.single["predictions"][t] += 1
            self._request_round(ev.id, t, round_views, s, ev.ref)
            st.remember(ev.id, _Round(t, views))
            return
        self._count_arrived_labelled(t, learner.score_and_learn_views(round_views, ev.y, t), ev.y)

    def _event(self, ev: Event) -> None:
        st = self.state
        if ev.y is not None:
            self._check_y(ev.y)
        t = st.task_for(ev.task)
        x = ev.x
        if ev.y is None:
            # Validated once here: the score, the query decision and a later label reuse it.
            self._unlabelled_event(ev.id, t, as_vector(x, self.learner.n_features), ev.ref)
            return
        self._count_arrived_labelled(t, self._score_and_learn(x, ev.y, t), ev.y)

    def _count_arrived_labelled(self, t: int, s: float, y: float) -> None:
        """Counters of an event (or round) learned with the label it arrived with."""
        st = self.state
        st.single["events"][t] += 1
        st.single["predictions"][t] += 1
        st.single["labels"][t] += 1
        st.totals["labelled_events"] += 1
        if not self.classification:
            st.count_error(t, s, y)
        elif (s >= 0.0) != (y > 0.0):
            st.single["mistakes"][t] += 1

    def _batch(self, b: BatchEvent) -> int:
        st = self.state
        y = b.y
        if self.classification:
            ok = (y == 1.0) | (y == -1.0)
            all_labelled = bool(ok.all())
            labelled = ok if all_labelled else ~np.isnan(y)
            if not all_labelled and not (ok | ~labelled).all():
                raise _Dead("labels y must be -1 or +1 for a classification model")
        else:
            labelled = ~np.isnan(y)
            all_labelled = bool(labelled.all())
        names = b.tasks
        known = st.task_by_name
        if names.count(names[0]) == b.n:
            tasks = np.full(b.n, st.task_for(names[0]), dtype=np.int64)
        else:
            for name in dict.fromkeys(names):
                if name not in known:
                    st.task_for(name)
            tasks = np.fromiter(map(known.__getitem__, names), np.int64, b.n)
        X = b.X
        n = b.n
        learner = self.learner
        if all_labelled:
            bounds = [(0, n, True)]
        else:
            change = np.flatnonzero(labelled[1:] != labelled[:-1]) + 1
            starts = [0, *change.tolist()]
            ends = [*change.tolist(), n]
            bounds = [(a, e, bool(labelled[a])) for a, e in zip(starts, ends)]
        started = False  # whether some row was applied: a later refusal is then a failure
        try:
            for a, e, is_labelled in bounds:
                if is_labelled:
                    ty, tt = y[a:e], tasks[a:e]
                    scores = learner.score_and_learn_many(X[a:e], ty, tt)
                    started = True
                    self._count_labelled(scores, ty, tt)
                    continue
                self._unlabelled_rows(b, tasks, a, e)
                started = True
        except ValueError as exc:
            if started:  # rows before it were applied: not an entry refused whole
                raise LearnerFailed([b.id.encode()], exc) from exc
            raise
        if not all_labelled:  # kept whole for the labels of its unlabelled rows
            self.state.remember(b.id, b, int(np.count_nonzero(~labelled)))
        return n

    def _unlabelled_rows(self, b: BatchEvent, tasks: np.ndarray, a: int, e: int) -> None:
        """Rows ``a:e`` of a batch entry, all unlabelled: what :meth:`_unlabelled_event` does
        for each, with the scores and query decisions of one ``decide_and_query_many`` call
        (the same draws, in row order) and the counts added up in one go. Row i is event
        ``<b.id>/<i>``, its key ``(ms, seq, i)``; the caller keeps the entry for the rows'
        labels."""
        tt = tasks[a:e]
        scores, probabilities, asked = self.learner.decide_and_query_many(
            b.X[a:e], tt, probability=self.reports_probability
        )
        self.state.deferred_unlabelled.append(tt)
        refs = b.refs
        ms, seq = entry_id_tuple(b.id)
        self._emit_requests(
            (
                f"{b.id}/{a + i}",
                int(tt[i]),
                float(scores[i]),
                None if refs is None else refs[a + i],
                "" if probabilities is None else repr(float(probabilities[i])),
                (ms, seq, a + i),
            )
            for i in np.flatnonzero(asked).tolist()
        )

    def _label(self, lab: Label) -> None:
        st = self.state
        st.totals["label_entries"] += 1
        entry, row = split_event_id(lab.event)
        key = parse_event_id(lab.event)
        if (key[0], key[1]) >= entry_id_tuple(lab.id):
            raise _Dead(f"unknown event {lab.event}: it is not earlier in the log than its label")
        if key in st.labelled:
            raise _Dead(f"event {lab.event} already has a label")
        if entry.encode() in st.quarantined:
            raise _Dead(f"event {lab.event} was never applied (the learner failed on it)")
        y = self._check_y(lab.y)
        cached = st.recent.get(lab.event)
        if cached is None and row is not None:
            cached = st.recent.get(entry)  # a batch entry kept whole for its unlabelled rows
        if cached is None:
            flat = self.fetch(entry)
            if flat is None:
                raise _Dead(f"unknown or expired event {lab.event}: not in the log")
            try:
                cached = decode_flat(entry, flat, n_features=self.d)
            except CodecError as exc:
                raise _Dead(f"event {lab.event} cannot be decoded: {exc}") from None
        if isinstance(cached, Label):
            raise _Dead(f"entry {lab.event} is a label, not an event")
        if isinstance(cached, MultiviewEvent):
            if row is not None:
                raise _Dead(f"event {entry} is a multiview round, it has no row {row}")
            if cached.y is not None:
                raise _Dead(f"event {lab.event} already has a label")
            self._check_multiview()
            known = {self._known_task(n, lab.event): x for n, x in cached.views.items()}
            cached = _Round(self._known_task(cached.task, lab.event), known)
        if isinstance(cached, _Round):
            learner: Any = self.learner
            s = learner.score_and_learn_views(self._round_views(cached.views), y, cached.task)
            self._count_label(lab, key, cached.task, s, y)
            return
        if isinstance(cached, Event):
            if row is not None:
                raise _Dead(f"event {entry} is a single event, it has no row {row}")
            if cached.y is not None:
                raise _Dead(f"event {lab.event} already has a label")
            t, x = self._known_task(cached.task, lab.event), cached.x
        elif isinstance(cached, BatchEvent):
            if row is None or not 0 <= row < cached.n:
                raise _Dead(f"batch entry {entry} has no row {row} (n = {cached.n})")
            if not math.isnan(cached.y[row]):
                raise _Dead(f"event {lab.event} already has a label")
            t, x = self._known_task(cached.tasks[row], lab.event), cached.X[row]
        else:  # a recent unlabelled event or batch row: (task index, x)
            t, x = cached
        # Predict-then-learn at the time the label is applied: the online mistake of a
        # label that arrives after its event is counted against the model that learns it.
        s = self._score_and_learn(x, y, t)
        self._count_label(lab, key, t, s, y)

    def _count_label(
        self, lab: Label, key: tuple[int, int, int], t: int, s: float, y: float
    ) -> None:
        """Counters of a label just learned; the event is labelled from now on."""
        st = self.state
        st.labelled.add(key)
        st.single["labels"][t] += 1
        if not self.classification:
            st.count_error(t, s, y)
        elif (s >= 0.0) != (y > 0.0):
            st.single["mistakes"][t] += 1
        st.totals["labels_applied"] += 1
        st.note_label(key)
        st.forget(lab.event)

    def _known_task(self, name: str, event_id: str) -> int:
        idx = self.state.task_index.get(name.encode())
        if idx is None:
            raise _Dead(f"event {event_id} was never applied (its entry was dead-lettered)")
        return idx
