"""Compiled kernels of the second-order multitask Perceptron in dual form (numba).

The learner (:mod:`learners.perceptron.second_order`) keeps the mistaken rows
``x_r`` (their tasks ``t_r`` and labels ``y_r``) and ``Q = (a I + G)^{-1}``. Here
the rows are stored **sparse**, as CSR arrays ``(ptr, idx, val)`` that grow with
the mistakes, so memory is O(s nnz + s^2) after s mistakes, whatever d is. For
a row ``(x, t)``:

* ``k_r = (A^{-1})_{t_r t} <x_r, x>``: ``x`` is scattered into a length-d
  scratch vector (O(nnz), undone afterwards; a dense x is read directly), and
  each stored row is read once: O(s nnz);
* ``u = Q k``, ``sigma = max(a, a + (A^{-1})_{tt} ||x||^2 - k^T u)``,
  ``margin = a (y^T u) / sigma``: O(s^2);
* on a mistake, ``Q`` grows by the block inverse and ``x`` is appended: O(s^2 + nnz).

So an event costs O(s (nnz + s)): the dual form's cost grows with the number
of mistakes, not with d. ``counts`` holds ``[s, stored non-zeros]``. A kernel
that lacks room for the next mistake stops *before* that row and reports it;
the caller grows the buffers and calls again.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.kernels import NO_INDEX, dot_sqnorm, register_warmup

__all__ = ["NEED_ROOM", "learn_csr", "learn_dense", "step"]

#: ``step`` status: the row was processed.
DONE = 0
#: ``step`` status: no room for the row's mistake; nothing was changed.
NEED_ROOM = 1


@njit(cache=True)
def _kernel_row(
    ptr: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    tasks: np.ndarray,
    Ainv: np.ndarray,
    s: int,
    dense_x: np.ndarray,
    t: int,
) -> np.ndarray:
    k = np.empty(s)
    for r in range(s):
        acc = 0.0
        for q in range(ptr[r], ptr[r + 1]):
            acc += dense_x[idx[q]] * val[q]
        k[r] = Ainv[tasks[r], t] * acc
    return k


@njit(cache=True)
def step(
    ptr: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    labels: np.ndarray,
    tasks: np.ndarray,
    Q: np.ndarray,
    counts: np.ndarray,
    Ainv: np.ndarray,
    scratch: np.ndarray,
    x_idx: np.ndarray,
    x_val: np.ndarray,
    y: float,
    t: int,
    a: float,
    learn: bool,
) -> tuple[float, bool, int]:
    """Score the row ``(x_idx, x_val)`` for task ``t`` and (when ``learn``) learn ``y``.

    Returns the margin before learning, whether it was a mistake, and the status
    (:data:`NEED_ROOM`: grow the buffers and call again; nothing changed).
    """
    s = counts[0]
    used = counts[1]
    # A dense row has every coordinate; an empty index array with fewer values is an empty row.
    dense = x_idx.shape[0] == 0 and x_val.shape[0] == scratch.shape[0]
    nnz = 0
    if dense:
        for i in range(x_val.shape[0]):
            nnz += x_val[i] != 0.0
    else:
        nnz = x_idx.shape[0]
    if learn and (s + 1 > Q.shape[0] or used + nnz > val.shape[0]):
        return 0.0, False, NEED_ROOM
    if dense:
        dense_x = x_val
    else:
        for q in range(x_idx.shape[0]):
            scratch[x_idx[q]] = x_val[q]
        dense_x = scratch
    k = _kernel_row(ptr, idx, val, tasks, Ainv, s, dense_x, t)
    if not dense:
        for q in range(x_idx.shape[0]):
            scratch[x_idx[q]] = 0.0
    u = np.zeros(s)
    for i in range(s):
        acc = 0.0
        for j in range(s):
            acc += Q[i, j] * k[j]
        u[i] = acc
    sqnorm = dot_sqnorm(dense_x if dense else scratch, x_idx, x_val)[1]
    sigma = a + Ainv[t, t] * sqnorm
    yu = 0.0
    for i in range(s):
        sigma -= k[i] * u[i]
        yu += labels[i] * u[i]
    if sigma < a:  # >= a in exact arithmetic; rounding takes it below on huge rows
        sigma = a
    margin = a * yu / sigma if s > 0 else 0.0
    if not learn or not math.isfinite(margin) or (margin >= 0.0) == (y > 0.0):
        return margin, False, DONE
    for i in range(s):
        ui = u[i]
        for j in range(s):
            Q[i, j] += ui * (u[j] / sigma)
    for i in range(s):
        Q[i, s] = -u[i] / sigma
        Q[s, i] = Q[i, s]
    Q[s, s] = 1.0 / sigma
    if dense:
        for i in range(x_val.shape[0]):
            if x_val[i] != 0.0:
                idx[used] = i
                val[used] = x_val[i]
                used += 1
    else:
        for q in range(nnz):
            idx[used + q] = x_idx[q]
            val[used + q] = x_val[q]
        used += nnz
    labels[s] = y
    tasks[s] = t
    ptr[s + 1] = used
    counts[0] = s + 1
    counts[1] = used
    return margin, True, DONE


@njit(cache=True)
def learn_dense(
    ptr: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    labels: np.ndarray,
    tasks: np.ndarray,
    Q: np.ndarray,
    counts: np.ndarray,
    Ainv: np.ndarray,
    scratch: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    row_tasks: np.ndarray,
    a: float,
    start: int,
    scores: np.ndarray,
) -> int:
    """Test-then-train over rows ``start..`` of ``X``; returns the row it stopped at (n: all)."""
    for r in range(start, X.shape[0]):
        f, _, status = step(
            ptr, idx, val, labels, tasks, Q, counts, Ainv, scratch,
            NO_INDEX, X[r], y[r], row_tasks[r], a, True,
        )  # fmt: skip
        if status == NEED_ROOM:
            return r
        scores[r] = f
    return X.shape[0]


@njit(cache=True)
def learn_csr(
    ptr: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    labels: np.ndarray,
    tasks: np.ndarray,
    Q: np.ndarray,
    counts: np.ndarray,
    Ainv: np.ndarray,
    scratch: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    y: np.ndarray,
    row_tasks: np.ndarray,
    a: float,
    start: int,
    scores: np.ndarray,
) -> int:
    """:func:`learn_dense` for a CSR batch."""
    n = indptr.shape[0] - 1
    for r in range(start, n):
        lo, hi = indptr[r], indptr[r + 1]
        f, _, status = step(
            ptr, idx, val, labels, tasks, Q, counts, Ainv, scratch,
            indices[lo:hi], data[lo:hi], y[r], row_tasks[r], a, True,
        )  # fmt: skip
        if status == NEED_ROOM:
            return r
        scores[r] = f
    return n


@register_warmup
def warm_second_order_kernels() -> None:
    """Compile the second-order kernels (dense, sparse, batch)."""
    ptr, idx, val = np.zeros(5, dtype=np.int64), np.zeros(16, dtype=np.int64), np.zeros(16)
    labels, tasks, Q = np.zeros(4), np.zeros(4, dtype=np.int64), np.zeros((4, 4))
    counts, Ainv, scratch = np.zeros(2, dtype=np.int64), np.eye(2), np.zeros(4)
    state = (ptr, idx, val, labels, tasks, Q, counts, Ainv, scratch)
    x = np.ones(4)
    step(*state, NO_INDEX, x, -1.0, 0, 1.0, True)
    step(*state, np.array([1, 3]), x[:2], 1.0, 1, 1.0, False)
    y, rows = np.ones(1), np.zeros(1, dtype=np.int64)
    learn_dense(*state, np.ones((1, 4)), y, rows, 1.0, 0, np.empty(1))
    for index in (np.int64, np.int32):
        indptr, indices = np.array([0, 2], dtype=index), np.array([0, 2], dtype=index)
        learn_csr(*state, indptr, indices, x[:2], y, rows, 1.0, 0, np.empty(1))
