"""Train/test split rules drawn afresh per run (``Dataset.draw_split``).

Every rule returns an ``int8`` array with 0 for training rows and 1 for test
rows; rows marked 2 take part in neither (used when a paper's test set is
smaller than the rest of the data, e.g. xu2018's 300 sentiment test reviews).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["TEST", "TRAIN", "UNUSED", "SplitRule", "per_task_split", "pooled_split"]

TRAIN, TEST, UNUSED = 0, 1, 2

SplitRule = Callable[[np.random.Generator], np.ndarray]


def _count(train: float, n: int) -> int:
    """``train`` as a row count: a fraction in (0, 1) or an absolute number."""
    k = round(train * n) if 0 < train < 1 else int(train)
    return max(0, min(n, k))


def per_task_split(task: np.ndarray, train: float, test: float | None = None) -> SplitRule:
    """Within every task, ``train`` rows (count or fraction) for training, the rest for test.

    With ``test`` set, at most that many (or that fraction) of the remaining rows
    are test rows and the others are unused.
    """
    groups = [np.flatnonzero(task == t) for t in np.unique(task)]

    def draw(rng: np.random.Generator) -> np.ndarray:
        split = np.full(task.shape[0], UNUSED if test is not None else TEST, dtype=np.int8)
        for rows in groups:
            order = rng.permutation(rows)
            k = _count(train, rows.shape[0])
            split[order[:k]] = TRAIN
            if test is not None:
                split[order[k : k + _count(test, rows.shape[0])]] = TEST
        return split

    return draw


def pooled_split(n: int, train: float) -> SplitRule:
    """``train`` rows (count or fraction) of all ``n`` rows for training, in random task order."""

    def draw(rng: np.random.Generator) -> np.ndarray:
        split = np.full(n, TEST, dtype=np.int8)
        split[rng.permutation(n)[: _count(train, n)]] = TRAIN
        return split

    return draw
