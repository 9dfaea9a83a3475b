"""Exact test-then-train over a batch for mistake-driven linear learners.

A mistake-driven learner changes its weights only on mistakes, and each change
is linear in the mistaken row: a mistake on row ``j`` moves the score of any
later row ``k`` by ``H[j, k] = y_j * c(t_k, t_j) * <x_j, x_k>``, where ``c`` is
the learner's task-coupling coefficient (``(A^{-1})_{t_k, t_j}`` for the
multitask Perceptron, saha2011 Eq. 2.2). So the sequential scores of a whole
batch follow from the scores at the batch start and the rows of the batch's
Gram matrix that belong to mistakes.

The mistake indicator ``m`` is the unique solution of the triangular recursion

    m_k = [ z_k + sum_{j < k} m_j Hy[j, k] <= thr_k ],

with ``z`` the batch-start signed margins. :func:`sequential_mistakes` solves it
by fixed-point iteration: start from the mistakes under the batch-start
weights, recompute every row's margin from the current guess (one
matrix-vector product), and repeat until the guess stops changing. Row ``k``
depends only on rows before it, so each round fixes at least one more row and
a fixed point *is* the sequential solution. On real streams a mistake rarely
flips a later decision, and two or three rounds suffice; when they do not, the
rest of the batch is finished one mistake at a time. Gram rows are computed
only for rows that are (or are guessed to be) mistakes.

The mistakes found are exactly those of the row-by-row loop up to floating
point rounding of the scores (sums of integer features are exact, so integer
data gives the row loop's mistakes bit for bit), and the weights are then
updated once with a matrix product.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["RowsFn", "sequential_mistakes"]

_NEG_TINY = float(np.nextafter(0.0, -1.0))

#: ``rows(idx)`` returns ``Hy[idx, :]`` (shape ``(len(idx), n)``) for the row indices ``idx``.
RowsFn = Callable[[np.ndarray], np.ndarray]

#: Fixed-point rounds before the remaining rows are resolved one mistake at a time.
MAX_ROUNDS = 6


def sequential_mistakes(z: np.ndarray, y: np.ndarray, rows: RowsFn) -> np.ndarray:
    """Find the mistakes of a batch processed row by row, in signed-margin form.

    Parameters
    ----------
    z : ndarray, shape (n,)
        Signed margins ``y_k * score_k`` of every row under the weights at the start
        of the batch. Updated in place to the signed margin each row has when it is
        reached (so ``z * y`` are the test-then-train scores).
    y : ndarray, shape (n,)
        Labels in {-1, +1}.
    rows : callable
        ``rows(idx)`` gives ``Hy[idx, :]`` with ``Hy[j, k] = y_k * H[j, k]``: the change
        of row k's signed margin when row j (j < k) is a mistake, where
        ``H[j, k] = y_j c(t_k, t_j) <x_j, x_k>``. Entries with ``k <= j`` are ignored.

    Returns
    -------
    mistakes : ndarray of int64
        Indices of the rows that were mistakes, increasing.
    """
    n = z.shape[0]
    # Row k is a mistake iff its prediction (+1 when the score is >= 0) differs from y_k:
    # for y = +1 that is z < 0, i.e. z <= -tiny; for y = -1 it is z <= 0.
    thr = np.where(y > 0.0, _NEG_TINY, 0.0)
    guess = z <= thr
    if not guess.any():
        return np.empty(0, dtype=np.int64)
    gram = _StrictRows(rows, n)
    settled = 0
    for _ in range(MAX_ROUNDS):
        margins = z + gram.sum_of(guess)
        new = margins <= thr
        differ = new != guess
        if not differ.any():
            z[:] = margins
            return np.flatnonzero(guess).astype(np.int64)
        # Rows up to the first disagreement now follow from a correct prefix: settled.
        settled = int(differ.argmax()) + 1
        guess = new
    return _finish_one_by_one(z, thr, gram, guess, settled)


_UPPER: dict[int, np.ndarray] = {}


def _strict_upper(n: int) -> np.ndarray:
    """The ``n x n`` mask of ``k > j`` (cached per size)."""
    mask = _UPPER.get(n)
    if mask is None:
        mask = _UPPER[n] = np.triu(np.ones((n, n)), 1)
    return mask


class _StrictRows:
    """``Hy`` restricted to its strict upper triangle, with only the rows asked for filled in."""

    def __init__(self, rows: RowsFn, n: int) -> None:
        self.rows = rows
        self.matrix = np.zeros((n, n))
        self.have = np.zeros(n, dtype=bool)
        self.upper = _strict_upper(n)

    def _fill(self, chosen: np.ndarray) -> None:
        missing = chosen & ~self.have
        if missing.any():
            idx = np.flatnonzero(missing)
            # Keep k > j only: a mistake moves later rows, not itself or earlier ones.
            self.matrix[idx] = self.rows(idx) * self.upper[idx]
            self.have |= missing

    def sum_of(self, chosen: np.ndarray) -> np.ndarray:
        """The sum of the rows of ``chosen`` (a boolean mask), computing missing rows first."""
        self._fill(chosen)
        return chosen.astype(np.float64) @ self.matrix

    def row(self, j: int) -> np.ndarray:
        """Row ``j``."""
        if not self.have[j]:
            self.matrix[j] = self.rows(np.asarray([j], dtype=np.int64))[0] * self.upper[j]
            self.have[j] = True
        return self.matrix[j]


def _finish_one_by_one(
    z: np.ndarray, thr: np.ndarray, gram: _StrictRows, guess: np.ndarray, settled: int
) -> np.ndarray:
    """Keep the settled prefix of ``guess`` and resolve the rest one mistake at a time."""
    prefix = guess.copy()
    prefix[settled:] = False
    z += gram.sum_of(prefix)
    found = np.flatnonzero(prefix).tolist()
    pos = settled
    n = z.shape[0]
    while pos < n:
        wrong = z[pos:] <= thr[pos:]
        k = int(wrong.argmax())
        if not wrong[k]:
            break
        j = pos + k
        found.append(j)
        z += gram.row(j)
        pos = j + 1
    return np.asarray(found, dtype=np.int64)
