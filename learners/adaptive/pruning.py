"""Pruning a selector's losing candidates (docs/algorithms.md Sec. 11.9).

``adaptive`` runs a grid of configurations and ``adaptive-auto`` a selector per input
view; every candidate learns every event, so the grid costs its size in time and memory
for the life of the model, though after a few thousand events most of it has no chance
of ever leading. A candidate is dropped at a check when its progressive-validation
mistakes exceed those of the learner's own predictions by more than ``z`` standard
deviations of their paired difference.

The evidence is its *duel* with the leader: over the events where exactly one of them
was wrong, ``worse`` (it was, the leader was not) and ``better`` (the other way round).
Where the two are equally good, ``worse - better`` is a sum of ``worse + better``
independent signs, of standard deviation ``sqrt(worse + better)``; the test is
``worse - better > z sqrt(worse + better)``. Events where both agree on being right or
wrong say nothing about which is better and do not count, so two near-identical
candidates are not told apart, and a candidate far worse on a few hundred events is.

Follow-the-leader predicts with the fewest cumulative mistakes, so a candidate
significantly behind the learner's own count would need as many extra correct answers to
lead; dropping it changes the learner's predictions only where that would have happened.
The leader is never dropped. Checks are every ``every`` labelled events, at fixed counts
of them, so the result does not depend on how the stream is cut into batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from learners.base import Param
from learners.params import non_negative, positive_int

__all__ = [
    "PRUNE",
    "PRUNE_EVERY",
    "count_duels",
    "cuts",
    "losing",
    "next_check",
    "survivors",
]

PRUNE = Param(
    "prune",
    3.0,
    "Drop a candidate once its progressive mistakes exceed those of the learner's own "
    "predictions by more than this many standard deviations of their paired difference "
    "(over the events where exactly one of the two was wrong); it then costs no time or "
    "memory. 0 keeps every candidate (docs/algorithms.md Sec. 11.9).",
    non_negative,
)
PRUNE_EVERY = Param(
    "prune_every",
    1000,
    "Labelled events between two pruning checks.",
    positive_int,
)


def losing(duels: np.ndarray, leader: int, z: float) -> np.ndarray:
    """Which candidates the test drops: ``worse - better > z sqrt(worse + better)`` with
    ``duels[m] = (worse, better)``, never ``leader``. Returns a boolean mask."""
    worse = duels[:, 0].astype(np.float64)
    better = duels[:, 1].astype(np.float64)
    drop = (worse - better) > z * np.sqrt(worse + better)
    drop[leader] = False
    return drop


def count_duels(duels: np.ndarray, wrong: np.ndarray, lead_wrong: np.ndarray) -> None:
    """Add a batch's duels: ``wrong`` (candidates x rows) whether each candidate erred,
    ``lead_wrong`` (rows,) whether the learner's own prediction did."""
    split = wrong != lead_wrong[None, :]
    duels[:, 0] += np.count_nonzero(split & wrong, axis=1)
    duels[:, 1] += np.count_nonzero(split & ~wrong, axis=1)


def next_check(events: int, every: int) -> int:
    """Labelled events until the next check, from ``events`` learned so far."""
    return every - events % every


def cuts(
    n: int, clock: np.ndarray, every: int, pruning: Callable[[], bool]
) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` pieces of ``n`` rows, each ending at a check or at the last row,
    while ``pruning()`` holds (then the rest in one piece). ``clock[0]`` (labelled events
    learned) and ``pruning()`` are read again for each piece, after the caller has learned
    the one before and run its check."""
    start = 0
    while start < n:
        stop = min(n, start + next_check(int(clock[0]), every)) if pruning() else n
        yield start, stop
        start = stop


def survivors(saved: object, size: int, what: str) -> np.ndarray:
    """The surviving candidates' indices a state holds (``saved``; None for a state saved
    before pruning existed: all ``size``), checked: increasing, at least one, below ``size``."""
    alive = np.asarray(np.arange(size) if saved is None else saved, dtype=np.int64).reshape(-1)
    if alive.size == 0 or np.any(np.diff(alive) <= 0) or alive[0] < 0 or alive[-1] >= size:
        raise ValueError(f"{what} must be increasing indices below {size}, got {alive}")
    return alive
