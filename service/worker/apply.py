"""Applying log entries to a model: the worker's deterministic state machine.

For each entry, in log order (DESIGN.md, "The service"):

* event: predict (the learner's decision before learning) and count it; with
  a label, count the online mistake and learn; without one, ask ``query_one``
  and, on True, emit a label request;
* batch: labelled rows go through ``learner.score_and_learn_many`` run by run
  (consecutive labelled rows: the learners' exact batch path); unlabelled rows
  are handled one by one as single events;
* label: read the event back (the in-memory cache of recent unlabelled events,
  else XRANGE on the log), apply the label at most once, count it;
* anything that cannot be decoded or applied goes to the dead-letter list with
  the reason, and the next entry is applied.

The state changes depend only on the log, the snapshot it started from and the
learner's own generator, so a replay from a snapshot reproduces them exactly.
Writes to Redis (label requests, dead letters) are collected in an
:class:`Outbox` that the worker flushes in one pipeline per read.
"""

from __future__ import annotations

import base64
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
from redis.exceptions import RedisError

from learners import Learner, as_vector
from service.codec import (
    BatchEvent,
    CodecError,
    Event,
    Label,
    decode_entry,
    entry_id_tuple,
    parse_event_id,
    split_event_id,
)
from service.worker.state import ModelState

__all__ = ["Applier", "Outbox", "dead_letter_fields"]

_F4 = np.dtype("<f4")
#: Fetches the raw field list of one log entry by id (None when it is gone).
Fetch = Callable[[str], Sequence[Any] | None]
#: Largest group of labelled single events learned in one batch call: a run of such
#: events within one millisecond is cut into chunks of this size from its start.
GROUP_MAX = 100
#: Smaller groups are applied event by event: below this size one batch call costs
#: more than the per-event calls (measured with cmtl, K = d = 100).
GROUP_MIN = 4
_BINARY = frozenset({b"x32", b"xi", b"xv", b"X32", b"y32"})


@dataclass
class Outbox:
    """Writes produced by applying entries, flushed by the worker after each read."""

    requests: list[dict[str, str]] = field(default_factory=list)
    dead: list[dict[str, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.requests or self.dead)

    def clear(self) -> None:
        """Forget everything (after a flush)."""
        self.requests.clear()
        self.dead.clear()


def _field_text(key: bytes, value: Any) -> Any:
    if isinstance(value, bytes):
        if key in _BINARY:
            return {"base64": base64.b64encode(value).decode()}
        try:
            return value.decode()
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(value).decode()}
    return str(value)


def dead_letter_fields(entry_id: str, reason: str, flat: Sequence[Any]) -> dict[str, str]:
    """Fields of a dead-letter entry: the original id, the reason and the original fields."""
    pairs: dict[str, Any] = {}
    for i in range(0, len(flat) - 1, 2):
        key = flat[i] if isinstance(flat[i], bytes) else str(flat[i]).encode()
        pairs[key.decode("utf-8", "replace")] = _field_text(key, flat[i + 1])
    return {"entry": entry_id, "reason": reason, "fields": orjson.dumps(pairs).decode()}


class _Dead(Exception):
    """An entry that cannot be applied; the message is the reason."""


def _overrides(learner: Learner, name: str) -> bool:
    return getattr(type(learner), name) is not getattr(Learner, name)


class Applier:
    """Applies log entries to one :class:`ModelState` (see the module docstring).

    Labelled single events go through the learner's ``score_and_learn_one``
    (test-then-train with one validation of x), runs of them through
    ``score_and_learn_many``.
    """

    def __init__(self, state: ModelState, outbox: Outbox, fetch: Fetch) -> None:
        self.state = state
        self.outbox = outbox
        self.fetch = fetch
        self._replaying_queries = False
        self.rebind()

    def rebind(self) -> None:
        """Cache the learner's methods and flags (call after the learner changes)."""
        learner = self.state.learner
        self.learner = learner
        self.d = learner.n_features
        self.classification = learner.label_kind == "classification"
        self.passive = not learner.is_active and not _overrides(learner, "query_one")
        self.query_probability: Callable[[Any, int], float] | None = getattr(
            learner, "query_probability", None
        )

    # ------------------------------------------------------------ helpers
    def _check_y(self, y: float) -> float:
        if self.classification:
            if y != 1.0 and y != -1.0:
                raise _Dead(f"label y must be -1 or +1 for a classification model, got {y!r}")
        elif not math.isfinite(y):
            raise _Dead(f"target y must be finite, got {y!r}")
        return y

    def _score_and_learn(self, x: Any, y: float, t: int) -> float:
        return self.learner.score_and_learn_one(x, y, t)

    def _request(self, event_id: str, t: int, x: Any, score: float, ref: Any) -> None:
        """Ask the learner whether to query ``x``; on True emit a label request."""
        st = self.state
        p = ""
        if not self.passive:
            if self.query_probability is not None:
                p = repr(float(self.query_probability(x, t)))
            if not self.learner.query_one(x, t):
                return
        st.single["queries"][t] += 1
        st.totals["label_requests"] += 1
        if self._replaying_queries and parse_event_id(event_id) <= st.queries_done_upto:
            return
        self._replaying_queries = False
        if isinstance(ref, bytes):
            ref = ref.decode("utf-8", "replace")
        self.outbox.requests.append(
            {
                "event": event_id,
                "task": st.task_names[t],
                "score": repr(score),
                "p": p,
                "ref": "" if ref is None else str(ref),
                "ts": str(int(time.time() * 1000)),
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

        Consecutive labelled single events (binary ``x32``, known task) with the
        same millisecond in their entry id form a *group* (cut into chunks of
        :data:`GROUP_MAX` from its start), applied with one
        ``score_and_learn_many`` call (groups smaller than :data:`GROUP_MIN` with
        the per-event path).
        Groups depend on the log alone, so a replay forms the same groups. A
        group at the end of ``entries`` may still grow: it is applied only when
        its millisecond is below ``horizon_ms`` (the server time after a read
        that returned everything there was), and otherwise returned unapplied,
        to be passed again, in front of the next entries.
        """
        st = self.state
        single = st.single
        events, predictions = single["events"], single["predictions"]
        totals = st.totals
        tindex = st.task_index
        self._replaying_queries = st.queries_done_upto >= (0, 0, -1)
        classification = self.classification
        decide = self.learner.decision_one
        frombuffer = np.frombuffer
        d4 = 4 * self.d
        n_events = 0
        group: list[tuple[Any, Any, int, float]] = []
        group_ms = b""
        for eid_b, flat in entries:
            # ---- classify: a single x32 event of a known task, fields in codec order?
            n = len(flat)
            t = None
            y: float | None = None
            ref = None
            if (
                6 <= n <= 10
                and flat[1] == b"e"
                and flat[0] == b"k"
                and flat[2] == b"task"
                and flat[4] == b"x32"
                and len(flat[5]) == d4
            ):
                t = tindex.get(flat[3])
                if t is not None and n > 6:
                    if flat[6] == b"y" and (n == 8 or (n == 10 and flat[8] == b"ref")):
                        try:
                            y = float(flat[7])
                        except ValueError:
                            t = None
                        else:
                            ref = flat[9] if n == 10 else None
                            if (y != 1.0 and y != -1.0) if classification else not math.isfinite(y):
                                t = None
                    elif flat[6] == b"ref" and n == 8:
                        ref = flat[7]
                    else:
                        t = None
            if t is not None and y is not None:
                ms = eid_b[: eid_b.index(b"-")]
                if group and ms != group_ms:
                    n_events += self._apply_group(group)
                    group = []
                group_ms = ms
                group.append((eid_b, flat, t, y))
                if len(group) == GROUP_MAX:  # a full chunk is complete whatever follows
                    n_events += self._apply_group(group)
                    group = []
                continue
            if group:
                n_events += self._apply_group(group)
                group = []
            try:
                if t is None:
                    n_events += self._generic(eid_b.decode(), flat)
                    continue
                # ---- an unlabelled single event: predict, maybe ask for its label
                x = frombuffer(flat[5], _F4)
                s = decide(x, t)
                n_events += 1
                events[t] += 1
                predictions[t] += 1
                eid = eid_b.decode()
                self._request(eid, t, x, s, ref)
                st.remember(eid, (t, x))
            except _Dead as exc:
                self._dead(eid_b.decode(), str(exc), flat)
            except RedisError:
                raise
            except Exception as exc:
                self._dead(eid_b.decode(), f"{type(exc).__name__}: {exc}", flat)
        tail: list[Any] = []
        if group:
            if horizon_ms is not None and int(group_ms) < horizon_ms:
                n_events += self._apply_group(group)
            else:
                tail = [[eid_b, flat] for eid_b, flat, _, _ in group]
        applied = len(entries) - len(tail)
        if applied:
            st.last_id = entries[applied - 1][0].decode()
            totals["entries"] += applied
            st.entries_since_snapshot += applied
        totals["events"] += n_events
        return tail

    def _apply_group(self, group: list[tuple[Any, Any, int, float]]) -> int:
        """Apply a group of labelled single events (see :meth:`apply`); returns its size."""
        n = len(group)
        if n >= GROUP_MIN:
            X = np.frombuffer(b"".join([g[1][5] for g in group]), _F4).reshape(n, self.d)
            if np.isfinite(X).all():
                tasks = np.fromiter([g[2] for g in group], np.int64, n)
                y = np.fromiter([g[3] for g in group], np.float64, n)
                try:
                    scores = self.learner.score_and_learn_many(X, y, tasks)
                except ValueError:
                    pass  # the batch was refused before any change: apply row by row
                else:
                    self._count_labelled(scores, y, tasks)
                    return n
        for eid_b, flat, t, y_one in group:
            try:
                x = np.frombuffer(flat[5], _F4)
                s = self._score_and_learn(x, y_one, t)
            except RedisError:
                raise
            except Exception as exc:
                self._dead(eid_b.decode(), f"{type(exc).__name__}: {exc}", flat)
                n -= 1
                continue
            st = self.state
            st.single["events"][t] += 1
            st.single["predictions"][t] += 1
            st.single["labels"][t] += 1
            st.totals["labelled_events"] += 1
            if self.classification and (s >= 0.0) != (y_one > 0.0):
                st.single["mistakes"][t] += 1
        return n

    def _count_labelled(self, scores: np.ndarray, y: np.ndarray, tasks: np.ndarray) -> None:
        """Counters of labelled rows learned through the batch path (added up later)."""
        st = self.state
        wrong = (scores >= 0.0) != (y > 0.0) if self.classification else None
        st.deferred.append((tasks, wrong))
        st.totals["labelled_events"] += int(tasks.shape[0])

    def _generic(self, entry_id: str, flat: Sequence[Any]) -> int:
        """Any entry: full decode and validation. Returns the number of events applied."""
        fields = dict(zip(flat[0::2], flat[1::2]))
        try:
            entry = decode_entry(entry_id, fields, n_features=self.d)
        except CodecError as exc:
            raise _Dead(str(exc)) from None
        if isinstance(entry, Event):
            self._event(entry)
            return 1
        if isinstance(entry, BatchEvent):
            return self._batch(entry)
        self._label(entry)
        return 0

    def _event(self, ev: Event) -> None:
        st = self.state
        if ev.y is not None:
            self._check_y(ev.y)
        t = st.task_for(ev.task)
        x = ev.x
        if ev.y is None:
            # Validated once here: the score, the query decision and a later label reuse it.
            v = as_vector(x, self.learner.n_features)
            s = self.learner.decision_one(v, t)
            st.single["events"][t] += 1
            st.single["predictions"][t] += 1
            self._request(ev.id, t, v, s, ev.ref)
            st.remember(ev.id, (t, v))
            return
        s = self._score_and_learn(x, ev.y, t)
        st.single["events"][t] += 1
        st.single["predictions"][t] += 1
        st.single["labels"][t] += 1
        st.totals["labelled_events"] += 1
        if self.classification and (s >= 0.0) != (ev.y > 0.0):
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
        for a, e, is_labelled in bounds:
            if is_labelled:
                ty, tt = y[a:e], tasks[a:e]
                scores = learner.score_and_learn_many(X[a:e], ty, tt)
                self._count_labelled(scores, ty, tt)
                continue
            for i in range(a, e):
                t = int(tasks[i])
                x = as_vector(X[i], learner.n_features)  # a copy, validated once
                s = learner.decision_one(x, t)
                st.single["events"][t] += 1
                st.single["predictions"][t] += 1
                ref = b.refs[i] if b.refs is not None else None
                row_id = f"{b.id}/{i}"
                self._request(row_id, t, x, s, ref)
                st.remember(row_id, (t, x))
        return n

    def _label(self, lab: Label) -> None:
        st = self.state
        st.totals["label_entries"] += 1
        entry, row = split_event_id(lab.event)
        key = parse_event_id(lab.event)
        if (key[0], key[1]) >= entry_id_tuple(lab.id):
            raise _Dead(f"unknown event {lab.event}: it is not earlier in the log than its label")
        if key in st.labelled:
            raise _Dead(f"event {lab.event} already has a label")
        y = self._check_y(lab.y)
        cached = st.recent.get(lab.event)
        if cached is None:
            flat = self.fetch(entry)
            if flat is None:
                raise _Dead(f"unknown or expired event {lab.event}: not in the log")
            try:
                cached = decode_entry(entry, dict(zip(flat[0::2], flat[1::2])), n_features=self.d)
            except CodecError as exc:
                raise _Dead(f"event {lab.event} cannot be decoded: {exc}") from None
        if isinstance(cached, Label):
            raise _Dead(f"entry {lab.event} is a label, not an event")
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
        st.labelled.add(key)
        st.single["labels"][t] += 1
        if self.classification and (s >= 0.0) != (y > 0.0):
            st.single["mistakes"][t] += 1
        st.totals["labels_applied"] += 1
        st.recent.pop(lab.event, None)

    def _known_task(self, name: str, event_id: str) -> int:
        idx = self.state.task_index.get(name.encode())
        if idx is None:
            raise _Dead(f"event {event_id} was never applied (its entry was dead-lettered)")
        return idx
