"""Compiled test-then-train kernels of the linear Perceptron family (numba).

One kernel serves every linear learner of the family; ``kind`` says which
rule a row follows. The state is one float buffer ``S`` with one weight vector
per row (and ``A``, the ``K x K`` inverse interaction matrix, for ``MATRIX``):

========== ====================== =============================================
kind       ``S`` rows             rule for a row ``(x, y, t)`` (score first)
========== ====================== =============================================
INDEPENDENT ``W`` (K)             ``f = <w_t, x>``; mistake: ``w_t += y x``
POOLED      ``w`` (1)             ``f = <w, x>``; mistake: ``w += y x``
B_FAMILY    ``V`` (K), ``s`` (1)  ``f = (<v_t, x> + p0 <s, x>) / p1``, p0 = b/K,
                                  p1 = 1 + b; mistake: ``v_t += y x, s += y x``
                                  (docs/algorithms.md Sec. 1.2, O(nnz) form)
MATRIX      ``W`` (K)             ``f = <w_t, x>``; mistake: ``w_j += y A_jt x``
                                  for every j (saha2011 Eq. 2.2)
PA_TASK     ``W`` (K)             Passive-Aggressive on ``w_t`` (Crammer et al.
                                  2006, Eqs. 7-9; p0 = variant, p1 = C)
PA_POOLED   ``w`` (1)             the same on the shared ``w``
========== ====================== =============================================

A mistake is ``SGN(f) != y`` with ``SGN(0) = +1``. Every batch is processed row
by row in stream order, so the results are those of the row-by-row loop; the
cost is O(nnz) per row (O(K nnz) for a MATRIX mistake), whatever the mistake
rate. A row whose score is not finite (NaN or infinite input) changes nothing.
A dense batch may hold float32 rows for the rules whose products all have a
float64 weight factor (not the Passive-Aggressive ones, which sum ``||x||^2``):
each value is then widened to float64 before it is used, so the results are those
of the float64 copy, without making it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.kernels import (
    NO_INDEX,
    ROW_HELPER,
    ROW_KERNEL,
    axpy,
    axpy2,
    dot,
    dot2,
    dot_sqnorm,
    prefetch_columns,
    register_warmup,
)

__all__ = [
    "B_FAMILY",
    "INDEPENDENT",
    "MATRIX",
    "PA_POOLED",
    "PA_TASK",
    "POOLED",
    "PA_VARIANTS",
    "decide_dense",
    "learn_csr",
    "learn_csr_checked",
    "BAD_INPUT",
    "learn_dense",
    "learn_dense_checked",
    "learn_one_dense",
    "step",
]

INDEPENDENT, POOLED, B_FAMILY, MATRIX, PA_TASK, PA_POOLED = range(6)
#: The ``p0`` code of each Passive-Aggressive variant.
PA_VARIANTS = {"pa": 0.0, "pa1": 1.0, "pa2": 2.0}
_NO_MATRIX = np.zeros((1, 1))


@njit(**ROW_HELPER)
def _pa_step(loss: float, sqnorm: float, variant: float, C: float) -> float:
    """``tau`` of PA / PA-I / PA-II (Crammer et al. 2006, Eqs. 7-9) for ``loss > 0``."""
    if variant == 0.0:
        return loss / sqnorm
    if variant == 1.0:
        return min(C, loss / sqnorm)
    return loss / (sqnorm + 1.0 / (2.0 * C))


@njit(**ROW_KERNEL)
def step(
    kind: int,
    S: np.ndarray,
    A: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    y: float,
    t: int,
    p0: float,
    p1: float,
    learn: bool,
) -> tuple[float, bool]:
    """Score the row ``(idx, val)`` for task ``t``, then (when ``learn``) learn ``y``.

    Returns the score before learning and whether the weights changed.
    """
    sqnorm = 0.0
    if kind == B_FAMILY:
        own, shared = dot2(S[t], S[S.shape[0] - 1], idx, val)
        score = (own + p0 * shared) / p1
    elif kind == POOLED:
        score = dot(S[0], idx, val)
    elif kind == PA_POOLED:
        score, sqnorm = dot_sqnorm(S[0], idx, val)
    elif kind == PA_TASK:
        score, sqnorm = dot_sqnorm(S[t], idx, val)
    else:
        score = dot(S[t], idx, val)
    if not learn or not math.isfinite(score):
        return score, False
    if kind in (PA_TASK, PA_POOLED):
        loss = 1.0 - y * score
        if loss <= 0.0 or sqnorm == 0.0:
            return score, False
        tau = _pa_step(loss, sqnorm, p0, p1)
        axpy(S[t if kind == PA_TASK else 0], tau * y, idx, val)
        return score, True
    if (score >= 0.0) == (y > 0.0):
        return score, False
    if kind == INDEPENDENT:
        axpy(S[t], y, idx, val)
    elif kind == POOLED:
        axpy(S[0], y, idx, val)
    elif kind == B_FAMILY:
        axpy2(S[t], S[S.shape[0] - 1], y, idx, val)
    else:
        for j in range(A.shape[0]):
            c = y * A[j, t]
            if c != 0.0:
                axpy(S[j], c, idx, val)
    return score, True


@njit(cache=True)
def decide_dense(kind: int, S: np.ndarray, x: np.ndarray, t: int, p0: float, p1: float) -> float:
    """The score of the dense row ``x`` for task ``t`` (no learning): the lean predict call."""
    return step(kind, S, _NO_MATRIX, NO_INDEX, x, 0.0, t, p0, p1, False)[0]


@njit(cache=True)
def learn_one_dense(
    kind: int, S: np.ndarray, A: np.ndarray, x: np.ndarray, y: float, t: int, p0: float, p1: float
) -> float:
    """Test-then-train on the dense row ``x``; returns the score before learning."""
    return step(kind, S, A, NO_INDEX, x, y, t, p0, p1, True)[0]


@njit(**ROW_KERNEL)
def learn_dense(
    kind: int,
    S: np.ndarray,
    A: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    p0: float,
    p1: float,
    scores: np.ndarray,
) -> int:
    """Test-then-train over the rows of the dense ``X`` in order; returns the number of updates.

    A row whose score is not finite (NaN or infinite values in it) stops the pass:
    the result is then ``-1 - row`` and the rows before it have been learned.
    """
    updates = 0
    for r in range(X.shape[0]):
        score, changed = step(kind, S, A, NO_INDEX, X[r], y[r], tasks[r], p0, p1, True)
        if not math.isfinite(score):
            return -1 - r
        scores[r] = score
        updates += changed
    return updates


#: What :func:`learn_dense_checked` returns for input it refuses (nothing changed).
BAD_INPUT = -(2**62)


@njit(cache=True)
def learn_dense_checked(
    kind: int,
    S: np.ndarray,
    A: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    n_tasks: int,
    check_finite: bool,
    p0: float,
    p1: float,
    scores: np.ndarray,
) -> int:
    """:func:`learn_dense` after checking the batch in the same call: every label -1 or
    +1, every task index in ``[0, n_tasks)`` and, with ``check_finite``, every value of
    ``X`` finite. Input that fails a check gives :data:`BAD_INPUT` and changes nothing
    (the caller then takes the general validation, which says what is wrong)."""
    for r in range(X.shape[0]):
        if not (y[r] == 1.0 or y[r] == -1.0) or tasks[r] < 0 or tasks[r] >= n_tasks:
            return BAD_INPUT
    if check_finite:
        for r in range(X.shape[0]):
            for j in range(X.shape[1]):
                if not math.isfinite(X[r, j]):
                    return BAD_INPUT
    return learn_dense(kind, S, A, X, y, tasks, p0, p1, scores)


@njit(**ROW_KERNEL)
def learn_csr(
    kind: int,
    S: np.ndarray,
    A: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    p0: float,
    p1: float,
    scores: np.ndarray,
) -> int:
    """:func:`learn_dense` for a CSR batch (sorted column indices per row). Each row
    prefetches the task weights the next one is scored with
    (:func:`learners.kernels.prefetch_columns`), except for the pooled rules, whose one
    vector stays in the cache (there the prefetches cost 18% on the sparse stream)."""
    updates = 0
    rows = indptr.shape[0] - 1
    ahead = kind not in (POOLED, PA_POOLED)
    for r in range(rows):
        a, b = indptr[r], indptr[r + 1]
        if ahead and r + 1 < rows:
            prefetch_columns(S[tasks[r + 1]], indices, b, indptr[r + 2])
            if kind == B_FAMILY:
                prefetch_columns(S[S.shape[0] - 1], indices, b, indptr[r + 2])
        score, changed = step(kind, S, A, indices[a:b], data[a:b], y[r], tasks[r], p0, p1, True)
        if not math.isfinite(score):
            return -1 - r
        scores[r] = score
        updates += changed
    return updates


@njit(cache=True)
def _canonical_csr(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    n_tasks: int,
    dim: int,
) -> bool:
    """Whether a CSR batch is canonical and valid, in one pass: ``indptr`` starts at 0
    and never decreases, every row's column indices increase strictly within
    ``[0, dim)``, every stored value is finite and non-zero, every label is -1 or +1
    and every task index is in ``[0, n_tasks)``."""
    n = indptr.shape[0] - 1
    if n != y.shape[0] or n != tasks.shape[0] or indptr[0] != 0:
        return False
    if indptr[n] > indices.shape[0] or indptr[n] > data.shape[0]:
        return False
    for r in range(n):
        if not (y[r] == 1.0 or y[r] == -1.0) or tasks[r] < 0 or tasks[r] >= n_tasks:
            return False
        a, b = indptr[r], indptr[r + 1]
        if b < a or (b > a and (indices[a] < 0 or indices[b - 1] >= dim)):
            return False
    # strictly increasing columns within each row: count the non-increasing steps of
    # the whole index array (a branch-free pass the compiler vectorises), then take
    # away the steps that cross from one non-empty row to the next
    m = indptr[n]
    steps = 0
    for k in range(1, m):
        steps += indices[k] <= indices[k - 1]
    for r in range(1, n):
        a = indptr[r]
        if 0 < a < m and a != indptr[r - 1]:
            steps -= indices[a] <= indices[a - 1]
    if steps != 0:
        return False
    # every stored value non-zero and finite (v - v is NaN for an infinite or NaN v)
    bad = False
    for k in range(m):
        v = data[k]
        bad |= (v == 0.0) | (v - v != 0.0)
    return not bad


@njit(cache=True)
def learn_csr_checked(
    kind: int,
    S: np.ndarray,
    A: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    n_tasks: int,
    p0: float,
    p1: float,
    scores: np.ndarray,
) -> int:
    """:func:`learn_csr` after checking the batch in the same call (:func:`_canonical_csr`,
    the row length being that of ``S``). A batch that fails a check gives :data:`BAD_INPUT`
    and changes nothing (the caller then takes the general validation, which
    canonicalises the batch or says what is wrong)."""
    if not _canonical_csr(indptr, indices, data, y, tasks, n_tasks, S.shape[1]):
        return BAD_INPUT
    return learn_csr(kind, S, A, indptr, indices, data, y, tasks, p0, p1, scores)


@register_warmup
def warm_linear_kernels() -> None:
    """Compile the dense, sparse and batch kernels of the linear Perceptron family."""
    S = np.zeros((3, 4))
    A = np.eye(2)
    x = np.ones(4)
    idx = np.array([1, 3], dtype=np.int64)
    for kind in (INDEPENDENT, B_FAMILY):
        step(kind, S, A, NO_INDEX, x, 1.0, 0, 1.0, 2.0, True)
        step(kind, S, A, idx, x[:2], -1.0, 1, 1.0, 2.0, True)
        decide_dense(kind, S, x, 0, 1.0, 2.0)
        learn_one_dense(kind, S, A, x, 1.0, 0, 1.0, 2.0)
    X = np.ones((2, 4))
    y = np.ones(2)
    tasks = np.zeros(2, dtype=np.int64)
    learn_dense(MATRIX, S, A, X, y, tasks, 0.0, 0.0, np.empty(2))
    # float32 rows (the worker's batches, read without a float64 copy)
    learn_dense(MATRIX, S, A, X.astype(np.float32), y, tasks, 0.0, 0.0, np.empty(2))
    read_only = X.astype(np.float32)
    read_only.flags.writeable = False  # rows read in place from the bytes of a log entry
    for rows in (X, X.astype(np.float32), read_only):
        learn_dense_checked(MATRIX, S, A, rows, y, tasks, 2, True, 0.0, 0.0, np.empty(2))
    for index in (np.int64, np.int32):
        indptr, indices = np.array([0, 2, 4], dtype=index), np.array([0, 2, 1, 3], dtype=index)
        learn_csr(MATRIX, S, A, indptr, indices, x, y, tasks, 0.0, 0.0, np.empty(2))
        learn_csr_checked(
            MATRIX, S, A, indptr, indices, x, y, tasks, 2, 0.0, 0.0, np.empty(2)
        )  # fmt: skip
