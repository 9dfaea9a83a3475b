"""The per-model history stream: periodic counter totals for the dashboard's curves.

The worker appends one entry to ``omtl:{m}:history`` (``MAXLEN ~ history_maxlen``)
when it has published a snapshot and at least ``history_interval_s`` seconds have
passed since the model's previous entry; a snapshot that comes sooner marks the
model, and the next maintenance tick past the interval writes the entry, so the
last state of a burst is always recorded. A clean stop writes what is pending.
Idle models write nothing.

An entry holds the scalar totals and, per task, the cumulative per-task counters
of only the tasks whose counters changed since the model's previous entry (all
tasks in the first entry after the worker loads the model), so an entry of a
model with thousands of tasks stays small when few of them move. Readers carry
each task's last values forward (:mod:`service.api.services.history`).
See ``docs/architecture.md``, "The history stream".
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from service.store import Store, StoreReplyError, keys
from service.worker.owned import Owned
from service.worker.state import ModelState

__all__ = ["HistoryRecorder", "history_fields"]

log = logging.getLogger("omtl.worker")


def _plain(values: np.ndarray) -> list[Any]:
    """Counter values as JSON numbers (ints stay ints)."""
    if np.issubdtype(values.dtype, np.integer):
        return [int(v) for v in values.tolist()]
    return [float(v) for v in values.tolist()]


def history_fields(
    state: ModelState, previous: dict[str, np.ndarray] | None
) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """The stream fields of one history entry of ``state`` and the per-task counters
    it was built from (the ``previous`` of the next entry).

    Only tasks whose counters differ from ``previous`` are listed (every task when
    ``previous`` is None).
    """
    counters = {name: np.asarray(v) for name, v in state.counters().items()}
    # regression: the per-task error sums the rMSE curves are drawn from
    counters.update({n: v for n, v in state.error_sums().items() if v.any()})
    k = len(state.task_names)
    changed = np.zeros(k, dtype=bool)
    for name, values in counters.items():
        now = values[:k]
        before = None if previous is None else previous.get(name)
        if before is None:
            changed[:] = True
            break
        old = np.zeros(k, dtype=now.dtype)
        old[: min(k, before.shape[0])] = before[:k]
        changed |= now != old
    idx = np.flatnonzero(changed)
    tasks: dict[str, Any] = {"names": [state.task_names[i] for i in idx.tolist()]}
    for name, values in counters.items():
        tasks[name] = _plain(values[:k][idx])
    totals = {name: int(v) for name, v in state.totals.items()}
    for name, values in counters.items():
        total = values[:k].sum()
        totals.setdefault(name, int(total) if np.issubdtype(values.dtype, np.integer) else total)
    fields = {
        "ts": f"{time.time():.3f}",
        "version": str(state.version),
        "generation": str(state.generation),
        "k": str(k),
        "totals": json.dumps(totals, separators=(",", ":"), default=float),
        "tasks": json.dumps(tasks, separators=(",", ":")),
    }
    return fields, {name: values[:k].copy() for name, values in counters.items()}


class HistoryRecorder:
    """Decides when each owned model gets a history entry, and writes it."""

    def __init__(self, interval_s: float, maxlen: int) -> None:
        self.interval_s = interval_s
        self.maxlen = maxlen
        self._last_at: dict[str, float] = {}
        self._previous: dict[str, dict[str, np.ndarray]] = {}
        self._due: set[str] = set()

    def _write(self, r: Store, state: ModelState, now: float) -> None:
        fields, counters = history_fields(state, self._previous.get(state.name))
        try:
            r.xadd(keys.history_key(state.name), fields, maxlen=self.maxlen, approximate=True)  # type: ignore[arg-type]
        except StoreReplyError as exc:  # e.g. a key of another type: the curves go without
            log.warning("cannot append to the history of model %r: %s", state.name, exc)
        self._previous[state.name] = counters
        self._last_at[state.name] = now
        self._due.discard(state.name)

    def snapshotted(self, r: Store, state: ModelState) -> None:
        """``state`` was just snapshotted: write an entry now if the interval has passed,
        else at a later :meth:`tick`."""
        now = time.monotonic()
        if now - self._last_at.get(state.name, -np.inf) >= self.interval_s:
            self._write(r, state, now)
        else:
            self._due.add(state.name)

    def tick(self, r: Store, owned: Mapping[str, Owned], force: bool = False) -> None:
        """Write the pending entries whose interval has passed (all with ``force``)."""
        now = time.monotonic()
        for name in list(self._due):
            model = owned.get(name)
            if model is None:
                self._due.discard(name)
            elif force or now - self._last_at.get(name, -np.inf) >= self.interval_s:
                self._write(r, model.state, now)

    def forget(self, name: str) -> None:
        """The model was let go: its next owner starts with a full entry."""
        self._last_at.pop(name, None)
        self._previous.pop(name, None)
        self._due.discard(name)
