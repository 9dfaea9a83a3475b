"""Compiled weight pass of saha2011 Algorithm 1 (lines 4-13) for the OMTL learners.

One kernel call runs the sequential test-then-train pass over a batch, row by
row in stream order, dense rows or CSR rows (:func:`weight_pass`; numba
compiles the round once per row form): the score ``<w_{i_t}, x>``, the round counter, on a
mistake the update ``w_j += y (A^{-1})_{j, i_t} x`` of every task (Eq. 3.3) and
the incremental Gram matrix ``G = W W^T`` and row sums of ``W``
(:func:`learners.omtl.updates.gram_after_rank_one`, docs/algorithms.md Sec. 2.8).
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

from typing import Any

import numpy as np
from numba import njit

from learners.kernels import KernelRows, register_warmup, row_axpy, row_dot, warm_learners

__all__ = ["warm", "weight_pass"]


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
def _round(
    idx: Any,
    val: np.ndarray,
    label: float,
    t: int,
    W: np.ndarray,
    Ainv: np.ndarray,
    G: np.ndarray,
    colsum: np.ndarray,
    counters: np.ndarray,
    round_step: int,
    a_from: int,
    track_at_stop: bool,
    c: np.ndarray,
    u: np.ndarray,
) -> tuple[float, bool]:
    """One round (Algorithm 1 lines 4-13) of row ``x`` (``idx`` None: dense); ``(score, stop)``."""
    s = row_dot(idx, val, W[t])
    counters[0] += round_step
    if (s >= 0.0) == (label > 0.0):
        return s, False
    for k in range(W.shape[0]):
        c[k] = label * Ainv[k, t]
        if c[k] != 0.0:
            row_axpy(idx, val, W[k], c[k])
    counters[1] += 1
    stop = counters[0] >= a_from
    if stop and not track_at_stop:
        return s, True
    xx = 0.0
    xsum = 0.0
    for p in range(val.shape[0]):
        xx += val[p] * val[p]
        xsum += val[p]
    for k in range(W.shape[0]):
        u[k] = row_dot(idx, val, W[k])
    _track_gram(G, colsum, u, c, xx, xsum)
    return s, stop


@njit(cache=True)
def _weight_pass(
    X: np.ndarray,
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
    """Rows ``begin..`` (CSR when ``indptr`` is not empty, else the rows of ``X``).

    Returns the next row: ``n`` when done, or the row after a mistake that must
    update A (then ``counters[2] = 1``; see the module docstring).
    """
    c = np.empty(W.shape[0])
    u = np.empty(W.shape[0])
    state = (W, Ainv, G, colsum, counters, round_step, a_from, track_at_stop, c, u)
    for i in range(begin, y.shape[0]):
        if indptr.shape[0] > 0:
            lo, hi = indptr[i], indptr[i + 1]
            scores[i], stop = _round(indices[lo:hi], data[lo:hi], y[i], tasks[i], *state)
        else:
            scores[i], stop = _round(None, X[i], y[i], tasks[i], *state)
        if stop:
            counters[2] = 1
            return i + 1
    return y.shape[0]


@register_warmup
def warm() -> float:
    """Compile (or load from the cache) the weight pass, dense and CSR; returns the seconds taken."""
    from learners.omtl.learners import OMTLLogDet  # the learners import this module

    return warm_learners(OMTLLogDet)


def weight_pass(rows: KernelRows, y: np.ndarray, tasks: np.ndarray, begin: int, *state: Any) -> int:
    """The weight pass over rows ``begin..``; ``state`` as :func:`_weight_pass` takes it."""
    return int(_weight_pass(*rows.kernel_arrays(), y, tasks, begin, *state))
