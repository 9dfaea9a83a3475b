"""The in-memory state of one model while a worker owns it.

:class:`ModelState` holds the learner, the task-name map, the per-task counters
(plain Python lists on the per-event path, numpy arrays for batch entries;
they are added up only when a snapshot is taken), the ids of events labelled
by label entries, and the id of the last applied log entry. It converts from
and to a :class:`service.store.snapshot.Snapshot`.

Two more figures make the API's numbers right per model kind
(docs/architecture.md, "Label requests and error figures"): for regression
models the per-task sums of squared and absolute online errors (accuracy means
nothing there), and the ids of events whose label was requested and not given
yet, so that label requests are counted as issued, answered and pending.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from learners import Learner
from service.store.snapshot import COUNTER_NAMES, ERROR_NAMES, Snapshot
from service.worker.task_lookup import TaskLookup

__all__ = ["TOTAL_NAMES", "ModelState"]

#: Scalar totals kept by the worker (the snapshot header's ``counters``).
TOTAL_NAMES = (
    "entries",
    "events",
    "labelled_events",
    "label_entries",
    "labels_applied",
    "label_requests",
    "dead_letters",
    "label_requests_answered",
    "label_requests_expired",
)

#: Most label requests remembered as unanswered; beyond it the oldest expire (still
#: labelable, but no longer counted as pending): as many as the label-request stream keeps
#: by default (OMTL_QUERIES_MAXLEN), 2.4 MB of snapshot.
REQUESTED_LIMIT = 100_000


def _no_limit(n_tasks: int) -> None:
    """The default task-count check: any number of tasks."""


#: How many recent unlabelled events are kept in memory for their labels.
EVENT_CACHE_SIZE = 20_000


class ModelState:
    """One model's learner, tasks, counters and log position (see the module docstring)."""

    def __init__(self, name: str, snapshot: Snapshot) -> None:
        self.name = name
        self.generation = snapshot.generation
        self.learner: Learner = snapshot.learner
        self.task_names: list[str] = list(snapshot.task_names)
        self.task_index: dict[bytes, int] = {n.encode(): i for i, n in enumerate(self.task_names)}
        self.task_by_name: dict[str, int] = {n: i for i, n in enumerate(self.task_names)}
        #: the task names again, for the compiled look-up of a batch entry's list of names
        self.task_lookup = TaskLookup()
        self.last_id = snapshot.last_id
        #: the id after which the next XREAD starts; ``pending`` holds entries read but
        #: not applied yet (a labelled group that may still grow, see Applier.apply)
        self.read_id = snapshot.last_id
        self.pending: list[Any] = []
        self.version = snapshot.version
        self.snapshot_created = snapshot.created
        k = self.learner.n_tasks
        # per-event counters (lists) and batch counters (arrays), summed at snapshot time
        self.single: dict[str, list[int]] = {name: [0] * k for name in COUNTER_NAMES}
        self.batched: dict[str, np.ndarray] = {
            name: np.asarray(snapshot.counters[name], dtype=np.int64).copy()
            for name in COUNTER_NAMES
        }
        #: (tasks, wrong-or-None) of rows learned through the batch path, not counted yet
        self.deferred: list[tuple[np.ndarray, np.ndarray | None]] = []
        #: tasks of unlabelled rows scored through the batch path, not counted yet
        self.deferred_unlabelled: list[np.ndarray] = []
        self.totals: dict[str, int] = {n: int(snapshot.totals.get(n, 0)) for n in TOTAL_NAMES}
        self.labelled: set[tuple[int, int, int]] = {
            (int(a), int(b), int(c)) for a, b, c in snapshot.labelled.tolist()
        }
        #: events with a label request not answered yet, oldest first (a dict keeps order)
        self.requested: dict[tuple[int, int, int], None] = dict.fromkeys(
            (int(a), int(b), int(c)) for a, b, c in snapshot.requested.tolist()
        )
        #: per-task sums of online errors (regression) and rows of the batch path not added yet
        self.errors: dict[str, np.ndarray] = {
            name: np.asarray(snapshot.errors[name], dtype=np.float64).copy() for name in ERROR_NAMES
        }
        self.deferred_errors: list[tuple[np.ndarray, np.ndarray]] = []
        self.recent: OrderedDict[str, Any] = OrderedDict()
        #: events the values of ``recent`` stand for, and the sizes of those that are not one
        self.recent_events = 0
        self.recent_sizes: dict[str, int] = {}
        self.entries_since_snapshot = 0
        self.last_snapshot_at = time.monotonic()
        #: when a replaced snapshot last went to the history (monotonic; never yet: -inf)
        self.archived_at = -math.inf
        #: label requests / dead letters up to these entry ids were already written
        #: before a restart; replaying them does not write them again.
        self.queries_done_upto: tuple[int, int, int] = (-1, -1, -1)
        self.dead_done_upto: tuple[int, int] = (-1, -1)
        self.outliers: set[int] = set()
        self.metric_tasks: set[str] = set()
        self.published: dict[str, list[int]] = {name: [] for name in COUNTER_NAMES}
        self.published_dead = int(self.totals["dead_letters"])
        self.published_entries = int(self.totals["entries"])
        #: raises (``ModelTooLarge``) when the model may not grow to the given number of
        #: tasks; the loader sets it from the model's limits (docs/architecture.md,
        #: "Models and generations"). The event naming the task is dead-lettered.
        self.check_task_count: Callable[[int], None] = _no_limit
        #: ids of entries that start a new group (``omtl:{m}:cuts``), and the millisecond
        #: of a group applied at the end of the last read (see Applier.apply)
        self.cuts: set[bytes] = set()
        self.closed_ms: bytes | None = None
        #: entries the learner failed on (``omtl:{m}:quarantine``): id -> the error. They
        #: are dead-lettered, never applied (docs/architecture.md, "When the learner fails")
        self.quarantined: dict[bytes, str] = {}
        #: a quarantined entry was passed since the last snapshot: snapshot at the next
        #: chance, so that a learner failing again replays from a recent state
        self.snapshot_soon = False

    # ------------------------------------------------------------ tasks
    def task_for(self, name: str) -> int:
        """Index of task ``name``, creating it (deterministically) when unseen.

        An unseen name takes the learner's next unnamed slot, else a task added
        with ``learner.add_task()``.
        """
        idx = self.task_by_name.get(name)
        if idx is not None:
            return idx
        key = name.encode()
        idx = len(self.task_names)
        if idx >= self.learner.n_tasks:
            self.check_task_count(idx + 1)
            added = self.learner.add_task()
            if added != idx:
                raise RuntimeError(f"learner added task {added}, expected {idx}")
            for lst in self.single.values():
                lst.append(0)
            for name_ in COUNTER_NAMES:
                self.batched[name_] = np.append(self.batched[name_], 0)
            for name_ in ERROR_NAMES:
                self.errors[name_] = np.append(self.errors[name_], 0.0)
        self.task_names.append(name)
        self.task_index[key] = idx
        self.task_by_name[name] = idx
        return idx

    # ------------------------------------------------------------ counters
    def _fold_deferred(self) -> None:
        """Add the deferred batch-path counts into the batch counters (a bincount each for
        the labelled and the unlabelled rows)."""
        if not (self.deferred or self.deferred_unlabelled):
            return
        k = self.learner.n_tasks
        for name in COUNTER_NAMES:
            arr = self.batched[name]
            if arr.shape[0] < k:
                self.batched[name] = np.concatenate([arr, np.zeros(k - arr.shape[0], np.int64)])
        if self.deferred_unlabelled:
            counts = np.bincount(np.concatenate(self.deferred_unlabelled), minlength=k)
            self.batched["events"] += counts
            self.batched["predictions"] += counts
            self.deferred_unlabelled.clear()
        if not self.deferred:
            return
        tasks = np.concatenate([t for t, _ in self.deferred])
        counts = np.bincount(tasks, minlength=k)
        for name in ("events", "predictions", "labels"):
            self.batched[name] += counts
        wrong = [(t, w) for t, w in self.deferred if w is not None]
        if wrong:
            wt = np.concatenate([t[w] for t, w in wrong])
            self.batched["mistakes"] += np.bincount(wt, minlength=k)
        self.deferred.clear()

    def counters(self) -> dict[str, np.ndarray]:
        """Per-task counters (length K) with both halves added up."""
        self._fold_deferred()
        k = self.learner.n_tasks
        out = {}
        for name in COUNTER_NAMES:
            total = np.zeros(k, dtype=np.int64)
            single = self.single[name]
            total[: len(single)] += np.asarray(single, dtype=np.int64)
            batched = self.batched[name]
            total[: batched.shape[0]] += batched
            out[name] = total
        return out

    # ------------------------------------------------------------ errors (regression)
    def count_error(self, task: int, prediction: float, y: float) -> None:
        """Add the online error of one label learned by a regression model."""
        diff = prediction - y
        self.errors["sq_error"][task] += diff * diff
        self.errors["abs_error"][task] += abs(diff)

    def count_errors(self, tasks: np.ndarray, predictions: np.ndarray, y: np.ndarray) -> None:
        """Keep the online errors of labelled rows of the batch path (added up later)."""
        self.deferred_errors.append((tasks, np.asarray(predictions, np.float64) - y))

    def error_sums(self) -> dict[str, np.ndarray]:
        """Per-task sums of squared and absolute online errors (length K, float64)."""
        if self.deferred_errors:
            k = self.learner.n_tasks
            tasks = np.concatenate([t for t, _ in self.deferred_errors])
            diff = np.concatenate([d for _, d in self.deferred_errors])
            self.errors["sq_error"] += np.bincount(tasks, weights=diff * diff, minlength=k)
            self.errors["abs_error"] += np.bincount(tasks, weights=np.abs(diff), minlength=k)
            self.deferred_errors.clear()
        return {name: arr.copy() for name, arr in self.errors.items()}

    # ------------------------------------------------------------ label requests
    def note_request(self, key: tuple[int, int, int]) -> None:
        """Remember that event ``key`` was asked for (the oldest beyond the limit expire)."""
        requested = self.requested
        requested[key] = None
        if len(requested) > REQUESTED_LIMIT:
            del requested[next(iter(requested))]
            self.totals["label_requests_expired"] += 1

    def note_label(self, key: tuple[int, int, int]) -> None:
        """A label for event ``key`` was applied: it answers its request, if it had one."""
        if self.requested.pop(key, 0) is None:
            self.totals["label_requests_answered"] += 1

    def forget_requested_before(self, first_id: tuple[int, int]) -> int:
        """Requests for events trimmed from the log can no longer be answered: they
        expire. Returns how many."""
        old = [key for key in self.requested if (key[0], key[1]) < first_id]
        for key in old:
            del self.requested[key]
        self.totals["label_requests_expired"] += len(old)
        return len(old)

    def label_requests(self) -> dict[str, int]:
        """Label requests issued, answered and pending (issued and not labelled yet)."""
        return {
            "issued": self.totals["label_requests"],
            "answered": self.totals["label_requests_answered"],
            "pending": len(self.requested),
        }

    # ------------------------------------------------------------ event cache
    def remember(self, event_id: str, value: Any, events: int = 1) -> None:
        """Keep a recent unlabelled event, or a batch entry's unlabelled rows under the
        entry's id (``events`` of them), so that their labels need no lookup: the oldest
        go once more than :data:`EVENT_CACHE_SIZE` events are kept."""
        recent = self.recent
        self.forget(event_id)
        recent[event_id] = value
        self.recent_events += events
        if events != 1:
            self.recent_sizes[event_id] = events
        while self.recent_events > EVENT_CACHE_SIZE:
            oldest, _ = recent.popitem(last=False)
            self.recent_events -= self.recent_sizes.pop(oldest, 1)

    def forget(self, event_id: str) -> None:
        """Drop what :meth:`remember` keeps under ``event_id``, if anything."""
        if self.recent.pop(event_id, None) is not None:
            self.recent_events -= self.recent_sizes.pop(event_id, 1)

    # ------------------------------------------------------------ snapshots
    def to_snapshot(self) -> Snapshot:
        """The current state as a :class:`Snapshot` (learner state is copied by encode)."""
        labelled = (
            np.asarray(sorted(self.labelled), dtype=np.int64).reshape(-1, 3)
            if self.labelled
            else np.zeros((0, 3), dtype=np.int64)
        )
        return Snapshot(
            version=self.version,
            generation=self.generation,
            learner=self.learner,
            task_names=list(self.task_names),
            last_id=self.last_id,
            created=time.time(),
            counters=self.counters(),
            model=self.name,
            totals=dict(self.totals),
            labelled=labelled,
            requested=np.asarray(list(self.requested), dtype=np.int64).reshape(-1, 3),
            errors=self.error_sums(),
        )

    def forget_labelled_before(self, first_id: tuple[int, int]) -> int:
        """Drop labelled ids older than the log's first entry (trimmed: a label can no
        longer find them, so it is dead-lettered either way). Returns how many."""
        old = {key for key in self.labelled if (key[0], key[1]) < first_id}
        self.labelled -= old
        return len(old)
