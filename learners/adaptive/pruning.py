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
from numba import njit

from learners.base import Param
from learners.kernels import register_warmup
from learners.params import non_negative, positive_int

__all__ = [
    "PRUNE",
    "PRUNE_EVERY",
    "count_duels",
    "count_rows",
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


@njit(cache=True)
def count_rows(
    scores: np.ndarray, y: np.ndarray, mistakes: np.ndarray, duels: np.ndarray, leads: np.ndarray
) -> None:  # pragma: no cover - compiled
    """Count a batch's mistakes and duels of the candidates, row by row: ``scores``
    (candidates x rows) each candidate's score of each row, ``y`` the labels. Before row
    i the leader is the candidate with the fewest ``mistakes`` (the first on ties), stored
    in ``leads[i]``; then every candidate whose sign error differs from the leader's counts
    a duel (:func:`count_duels`) and every erring candidate a mistake. ``mistakes`` and
    ``duels`` are updated in place: what :func:`count_duels` and the running counts give,
    in one pass instead of a dozen array operations (15-20 us of a 100-row batch)."""
    V, n = scores.shape
    for i in range(n):
        positive = y[i] > 0.0
        lead = 0
        for v in range(1, V):
            if mistakes[v] < mistakes[lead]:
                lead = v
        leads[i] = lead
        lead_wrong = (scores[lead, i] >= 0.0) != positive
        for v in range(V):
            wrong = (scores[v, i] >= 0.0) != positive
            if wrong != lead_wrong:
                duels[v, 0 if wrong else 1] += 1
            if wrong:
                mistakes[v] += 1


@register_warmup
def warm() -> None:
    """Compile :func:`count_rows` for the arrays the views' batches pass it."""
    count_rows(
        np.zeros((2, 1)),
        np.ones(1),
        np.zeros(2, dtype=np.int64),
        np.zeros((2, 2), dtype=np.int64),
        np.empty(1, dtype=np.int64),
    )


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
