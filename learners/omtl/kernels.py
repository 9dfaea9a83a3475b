"""Compiled weight pass of saha2011 Algorithm 1 (lines 4-13) for the OMTL learners.

One kernel call runs the sequential test-then-train pass over a batch, row by
row in stream order, for dense rows (:func:`weight_pass_dense`) or CSR rows
(:func:`weight_pass_csr`): the score ``<w_{i_t}, x>``, the round counter, on a
mistake the update ``w_j += y (A^{-1})_{j, i_t} x`` of every task (Eq. 3.3) and
the incremental Gram matrix ``G = W W^T`` and row sums of ``W``
(:func:`learners.omtl.updates.gram_after_rank_one`, algorithms.md Sec. 2.8).
Cost O(nnz) per row and O(K nnz + K^2) per mistake, whatever the mistake rate.

The ``K x K`` update of ``A`` (Eqs. 3.7-3.10, an eigendecomposition) stays in
numpy at its own cadence: a kernel stops at the first mistake that must update
A (round ``t >= EPOCH``) and returns the index of the next row; the learner
updates A and calls the kernel again from there. With ``track_at_stop`` (A fed
the weights after the mistake, ``a_update_uses='post'``) the kernel has also
folded the mistake into the Gram matrix; without it (``'pre'``) it stops right
after the weight update and the learner runs the reference tail (A from the
Gram matrix before the mistake, then the Gram tracking).

Both kernels read and write the learner's arrays in place; ``counters`` holds
``[n_rounds, n_mistakes, stopped]`` and is updated in place too (``stopped``
is set to 1 when the kernel returned at a mistake that must update A).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numba import njit

from learners.omtl.compiled import KernelRows, warm_row_helpers

__all__ = ["warm", "weight_pass", "weight_pass_csr", "weight_pass_dense"]


@njit(cache=True)
def _track_gram(
    G: np.ndarray, colsum: np.ndarray, u: np.ndarray, c: np.ndarray, xx: float, xsum: float
) -> None:
    """``G += c u^T + u c^T - ||x||^2 c c^T`` and ``colsum += c sum(x)`` (u = W' x after the step)."""
    K = c.shape[0]
    for a in range(K):
        for b in range(K):
            G[a, b] = G[a, b] + c[a] * u[b] + c[b] * u[a] - xx * (c[a] * c[b])
        colsum[a] = colsum[a] + c[a] * xsum


@njit(cache=True)
def weight_pass_dense(
    X: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    begin: int,
    W: np.ndarray,
    Ainv: np.ndarray,
    G: np.ndarray,
    colsum: np.ndarray,
    counters: np.ndarray,
    round_step: int,
    a_from: int,
    track_at_stop: bool,
    scores: np.ndarray,
) -> int:
    """Rows ``begin..`` of a dense batch; returns the next row (``n`` when done).

    Stops at a mistake made at round ``>= a_from``: after its Gram tracking with
    ``track_at_stop``, else right after its weight update (see the module docstring).
    """
    n, d = X.shape
    K = W.shape[0]
    c = np.empty(K)
    u = np.empty(K)
    for i in range(begin, n):
        t = tasks[i]
        label = y[i]
        s = 0.0
        for f in range(d):
            s += X[i, f] * W[t, f]
        scores[i] = s
        counters[0] += round_step
        if (s >= 0.0) == (label > 0.0):
            continue
        for k in range(K):
            c[k] = label * Ainv[k, t]
            if c[k] != 0.0:
                for f in range(d):
                    W[k, f] += c[k] * X[i, f]
        counters[1] += 1
        stop = counters[0] >= a_from
        if stop and not track_at_stop:
            counters[2] = 1
            return i + 1
        xx = 0.0
        xsum = 0.0
        for f in range(d):
            xx += X[i, f] * X[i, f]
            xsum += X[i, f]
        for k in range(K):
            acc = 0.0
            for f in range(d):
                acc += W[k, f] * X[i, f]
            u[k] = acc
        _track_gram(G, colsum, u, c, xx, xsum)
        if stop:
            counters[2] = 1
            return i + 1
    return n


@njit(cache=True)
def weight_pass_csr(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    begin: int,
    W: np.ndarray,
    Ainv: np.ndarray,
    G: np.ndarray,
    colsum: np.ndarray,
    counters: np.ndarray,
    round_step: int,
    a_from: int,
    track_at_stop: bool,
    scores: np.ndarray,
) -> int:
    """:func:`weight_pass_dense` for CSR rows (O(nnz) per row, O(K nnz) per mistake)."""
    n = y.shape[0]
    K = W.shape[0]
    c = np.empty(K)
    u = np.empty(K)
    for i in range(begin, n):
        lo, hi = indptr[i], indptr[i + 1]
        t = tasks[i]
        label = y[i]
        s = 0.0
        for p in range(lo, hi):
            s += data[p] * W[t, indices[p]]
        scores[i] = s
        counters[0] += round_step
        if (s >= 0.0) == (label > 0.0):
            continue
        for k in range(K):
            c[k] = label * Ainv[k, t]
            if c[k] != 0.0:
                for p in range(lo, hi):
                    W[k, indices[p]] += c[k] * data[p]
        counters[1] += 1
        stop = counters[0] >= a_from
        if stop and not track_at_stop:
            counters[2] = 1
            return i + 1
        xx = 0.0
        xsum = 0.0
        for p in range(lo, hi):
            xx += data[p] * data[p]
            xsum += data[p]
        for k in range(K):
            acc = 0.0
            for p in range(lo, hi):
                acc += W[k, indices[p]] * data[p]
            u[k] = acc
        _track_gram(G, colsum, u, c, xx, xsum)
        if stop:
            counters[2] = 1
            return i + 1
    return n


def warm() -> float:
    """Compile (or load from the cache) both kernels on tiny inputs; returns the seconds taken."""
    start = time.perf_counter()
    K, d = 2, 3
    X = np.ones((2, d))
    y = np.array([1.0, -1.0])
    tasks = np.array([0, 1], dtype=np.int64)
    indptr = np.array([0, 2, 3], dtype=np.int64)
    indices = np.array([0, 2, 1], dtype=np.int64)
    data = np.ones(3)
    for sparse in (False, True):
        W, Ainv, G, colsum = np.zeros((K, d)), np.eye(K), np.zeros((K, K)), np.zeros(K)
        counters = np.zeros(3, dtype=np.int64)
        scores = np.empty(2)
        if sparse:
            weight_pass_csr(
                indptr,
                indices,
                data,
                y,
                tasks,
                0,
                W,
                Ainv,
                G,
                colsum,
                counters,
                1,
                1 << 62,
                True,
                scores,
            )
        else:
            weight_pass_dense(
                X, y, tasks, 0, W, Ainv, G, colsum, counters, 1, 1 << 62, True, scores
            )
    warm_row_helpers()
    return time.perf_counter() - start


def weight_pass(rows: KernelRows, y: np.ndarray, tasks: np.ndarray, begin: int, *state: Any) -> int:
    """The weight pass over rows ``begin..``; ``state`` as :func:`weight_pass_dense` takes it."""
    if rows.dense is not None:
        return int(weight_pass_dense(rows.dense, y, tasks, begin, *state))
    return int(weight_pass_csr(rows.indptr, rows.indices, rows.data, y, tasks, begin, *state))
