"""Compiled sequential passes of selective sampling over Perceptron-style bases.

One call of :func:`selective_pass` processes a whole batch row by row, in the
order of the row-by-row reference (:class:`learners.active.selective.SelectiveSampling`
with ``_decision``, ``_query`` and ``_learn``), at a cost linear in the batch
and independent of the mistake rate. Per row ``(x, y, k)``:

1. the score ``p`` is the base learner's decision (algorithms.md Sec. 6);
2. active pass only: unless the query budget is spent, one uniform ``u`` is
   consumed and the label is asked for when ``u < b_t / (b_t + |p|)``
   (Cesa-Bianchi, Gentile & Zaniboni 2006, Fig. 1; ``b_t`` fixed or DOGMA's
   adaptive ``b R_t^2 sqrt(1 + n_k)``), or ``u < rate`` for the fixed-rate rule
   of xu2018's "Random" baseline;
3. a labelled row (every row of a labelled pass, a queried row of an active
   pass) is learned: on a mistake ``SGN(p) != y`` (``SGN(0) = +1``) the base
   steps. Bases (``form``):

   * :data:`ROWS`: one Perceptron per task, ``w_k += y x`` (``ipl``; with
     ``pooled`` one shared vector, ``stl`` / ``pt-global``);
   * :data:`B_FAMILY`: the multitask Perceptron in its shared + per-task form,
     ``p = (<x, v_k> + beta <x, s>) / (1 + b)``, ``v_k += y x``, ``s += y x``
     (``cmtl`` with the b-family matrix, saha2011 Eq. 2.2, algorithms.md Sec. 1.2);
   * :data:`MATRIX`: ``W += y outer(A^{-1}[:, k], x)`` (``cmtl`` with a graph or SPD A).

Rows come dense (a C-ordered 2-D array) or CSR (``indptr``, ``indices``,
``data``), see :func:`kernel_rows`; the small row helpers here are shared with
:mod:`learners.amlc.kernels`. The uniforms are drawn ahead by
:class:`learners.active.draws.Uniforms`. :func:`warm` compiles everything on
tiny inputs (``cache=True`` keeps the machine code on disk across processes).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.inputs import Batch

__all__ = [
    "B_FAMILY",
    "MATRIX",
    "NO_BUDGET",
    "ROWS",
    "KernelRows",
    "kernel_rows",
    "row_axpy",
    "row_dot",
    "row_margins",
    "row_sqnorm",
    "selective_pass",
    "warm",
]

ROWS = 0
B_FAMILY = 1
MATRIX = 2
#: ``remaining`` queries of a learner without budget.
NO_BUDGET = np.iinfo(np.int64).max

KernelRows = tuple[bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

_NO_DENSE = np.zeros((0, 0))
_NO_INT = np.zeros(0, dtype=np.int64)
_NO_FLOAT = np.zeros(0)


def kernel_rows(batch: Batch) -> KernelRows:
    """``(dense, X, indptr, indices, data)``: the batch in the form the kernels read."""
    if batch.dense is not None:
        return (
            True,
            np.ascontiguousarray(batch.dense, dtype=np.float64),
            _NO_INT,
            _NO_INT,
            _NO_FLOAT,
        )
    csr = batch.csr
    assert csr is not None
    return (
        False,
        _NO_DENSE,
        csr.indptr.astype(np.int64, copy=False),
        csr.indices.astype(np.int64, copy=False),
        np.ascontiguousarray(csr.data, dtype=np.float64),
    )


# ---------------------------------------------------------------- row helpers
@njit(cache=True)
def row_dot(
    w: np.ndarray,
    dense: bool,
    X: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    i: int,
) -> float:  # pragma: no cover - compiled
    """``<x_i, w>`` in O(nnz(x_i))."""
    s = 0.0
    if dense:
        for j in range(X.shape[1]):
            s += X[i, j] * w[j]
    else:
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * w[indices[p]]
    return s


@njit(cache=True)
def row_axpy(
    w: np.ndarray,
    a: float,
    dense: bool,
    X: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    i: int,
) -> None:  # pragma: no cover - compiled
    """``w += a x_i`` in place, O(nnz(x_i))."""
    if dense:
        for j in range(X.shape[1]):
            w[j] += a * X[i, j]
    else:
        for p in range(indptr[i], indptr[i + 1]):
            w[indices[p]] += a * data[p]


@njit(cache=True)
def row_sqnorm(
    dense: bool, X: np.ndarray, indptr: np.ndarray, data: np.ndarray, i: int
) -> float:  # pragma: no cover - compiled
    """``||x_i||^2``."""
    s = 0.0
    if dense:
        for j in range(X.shape[1]):
            s += X[i, j] * X[i, j]
    else:
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * data[p]
    return s


@njit(cache=True)
def row_margins(
    W: np.ndarray,
    out: np.ndarray,
    dense: bool,
    X: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    i: int,
) -> None:  # pragma: no cover - compiled
    """``out[m] = <x_i, w_m>`` for every row m of W: O(K nnz(x_i)).

    Dense rows run over the features once and keep one running sum per task, so
    the K sums advance together (each still adds its terms in feature order).
    """
    K = W.shape[0]
    for m in range(K):
        out[m] = 0.0
    if dense:
        for j in range(X.shape[1]):
            xj = X[i, j]
            for m in range(K):
                out[m] += W[m, j] * xj
    else:
        for p in range(indptr[i], indptr[i + 1]):
            c = indices[p]
            v = data[p]
            for m in range(K):
                out[m] += W[m, c] * v


# ---------------------------------------------------------------- selective sampling
@njit(cache=True)
def selective_pass(
    form: int,
    W: np.ndarray,
    s: np.ndarray,
    Ainv: np.ndarray,
    pooled: bool,
    beta: float,
    one_plus_b: float,
    dense: bool,
    X: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    active: bool,
    u: np.ndarray,
    remaining: int,
    b: float,
    rate: float,
    adaptive: bool,
    n_updates: np.ndarray,
    radius2: np.ndarray,
    scores: np.ndarray,
    queried: np.ndarray,
) -> tuple[int, int, int]:  # pragma: no cover - compiled
    """One sequential pass (see the module docstring). Returns (draws, queries, mistakes).

    ``rate > 0`` selects the fixed-rate rule ``u < rate``; otherwise the margin rule
    with ``b`` (and ``adaptive``, whose counters ``n_updates`` / ``radius2`` are
    updated in place). ``scores`` and ``queried`` are filled in.
    """
    n = y.shape[0]
    K = W.shape[0]
    drawn = 0
    asked = 0
    mistakes = 0
    for i in range(n):
        k = tasks[i]
        r = 0 if pooled else k
        if form == B_FAMILY:
            p = (
                row_dot(W[k], dense, X, indptr, indices, data, i)
                + beta * row_dot(s, dense, X, indptr, indices, data, i)
            ) / one_plus_b
        else:
            p = row_dot(W[r], dense, X, indptr, indices, data, i)
        scores[i] = p
        sq = 0.0
        if adaptive:
            sq = row_sqnorm(dense, X, indptr, data, i)
        if active:
            if remaining <= 0:
                continue
            if rate > 0.0:
                prob = rate
            else:
                bt = b
                if adaptive:
                    bt = b * max(sq, radius2[k]) * math.sqrt(1.0 + n_updates[k])
                denominator = bt + abs(p)
                prob = 1.0 if denominator <= 0.0 else bt / denominator
            draw = u[drawn]
            drawn += 1
            if not draw < prob:
                continue
            remaining -= 1
            asked += 1
            queried[i] = True
        label = y[i]
        if (p >= 0.0) == (label > 0.0):
            continue
        mistakes += 1
        if adaptive:
            n_updates[k] += 1
            radius2[k] = max(radius2[k], sq)
        if form == MATRIX:
            for m in range(K):
                row_axpy(W[m], label * Ainv[m, k], dense, X, indptr, indices, data, i)
        else:
            row_axpy(W[r], label, dense, X, indptr, indices, data, i)
            if form == B_FAMILY:
                row_axpy(s, label, dense, X, indptr, indices, data, i)
    return drawn, asked, mistakes


def warm() -> None:
    """Compile this module's kernels (dense and CSR rows) on tiny inputs."""
    dense = np.ones((2, 3))
    indptr = np.array([0, 1, 3], dtype=np.int64)
    indices = np.array([0, 1, 2], dtype=np.int64)
    data = np.ones(3)
    y = np.array([1.0, -1.0])
    tasks = np.zeros(2, dtype=np.int64)
    u = np.full(2, 0.5)
    for rows in (
        (True, dense, _NO_INT, _NO_INT, _NO_FLOAT),
        (False, _NO_DENSE, indptr, indices, data),
    ):
        for form in (ROWS, B_FAMILY, MATRIX):
            selective_pass(
                form,
                np.zeros((1, 3)),
                np.zeros(3),
                np.eye(1),
                False,
                0.5,
                2.0,
                *rows,
                y,
                tasks,
                True,
                u,
                NO_BUDGET,
                1.0,
                0.0,
                True,
                np.zeros(1, dtype=np.int64),
                np.zeros(1),
                np.empty(2),
                np.zeros(2, dtype=np.bool_),
            )
