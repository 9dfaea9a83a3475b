"""Exact test-then-train over a batch for mistake-driven linear learners.

A mistake-driven learner changes its weights only on mistakes, and each change
is linear in the mistaken row: a mistake on row ``j`` moves the score of any
later row ``k`` by ``H[j, k] = y_j * c(t_k, t_j) * <x_j, x_k>``, where ``c`` is
the learner's task-coupling coefficient (``(A^{-1})_{t_k, t_j}`` for the
multitask Perceptron, saha2011 Eq. 2.2). So the sequential scores of a whole
batch follow from the scores at the batch start and the batch's Gram matrix,
with one vectorised step per *mistake* instead of two numpy calls per *row*.
The mistakes found are exactly those of the row-by-row loop (up to floating
point rounding of the scores), and the weights are then updated once with a
matrix product.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sequential_mistakes"]

_NEG_TINY = float(np.nextafter(0.0, -1.0))


def sequential_mistakes(z: np.ndarray, y: np.ndarray, Hy: np.ndarray) -> np.ndarray:
    """Find the mistakes of a batch processed row by row, in signed-margin form.

    Parameters
    ----------
    z : ndarray, shape (n,)
        Signed margins ``y_k * score_k`` of every row under the weights at the start
        of the batch. Updated in place to the signed margin each row has when it is
        reached (so ``z * y`` are the test-then-train scores).
    y : ndarray, shape (n,)
        Labels in {-1, +1}.
    Hy : ndarray, shape (n, n)
        ``Hy[j, k] = y_k * H[j, k]``: change of row k's signed margin when row j
        (j < k) is a mistake, with ``H[j, k] = y_j c(t_k, t_j) <x_j, x_k>``.

    Returns
    -------
    mistakes : ndarray of int64
        Indices of the rows that were mistakes, increasing.
    """
    # Row k is a mistake iff its prediction (+1 when the score is >= 0) differs from y_k:
    # for y = +1 that is z < 0, i.e. z <= -tiny; for y = -1 it is z <= 0.
    thr = np.where(y > 0.0, _NEG_TINY, 0.0)
    n = z.shape[0]
    found: list[int] = []
    pos = 0
    while pos < n:
        wrong = z[pos:] <= thr[pos:]
        k = int(wrong.argmax())
        if not wrong[k]:
            break
        j = pos + k
        found.append(j)
        z[j + 1 :] += Hy[j, j + 1 :]
        pos = j + 1
    return np.asarray(found, dtype=np.int64)
