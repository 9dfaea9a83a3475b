"""Compiled weight pass of saha2011 Algorithm 1 (lines 4-16) for the OMTL learners.

One kernel call runs the sequential test-then-train pass over a batch, row by
row in stream order, dense rows or CSR rows (:func:`weight_pass`; numba
compiles the round once per row form): the score ``<w_{i_t}, x>``, the round counter, on a
mistake the update ``w_j += y (A^{-1})_{j, i_t} x`` of every task (Eq. 3.3) and
the incremental Gram matrix ``G = W W^T`` and row sums of ``W``
(:func:`learners.omtl.updates.gram_after_rank_one`, docs/algorithms.md Sec. 2.8).
Cost O(nnz) per row and O(K nnz + K^2) per mistake, whatever the mistake rate,
plus O(K^3) per A update.

From round ``EPOCH`` on, each mistake also updates ``A`` (Eqs. 3.7-3.10, an
eigendecomposition or a Cholesky factorisation), or with ``a_every`` m > 1 each mistake
that brings the learner's mistake count to a multiple of m (the option
``a_update_every``, docs/algorithms.md Sec. 2.8), inside the same call, at the same round as the numpy
reference (:func:`learners.omtl.a_kernels.a_update_into`, selected by ``kind``):
with ``track_at_stop`` (A fed the weights after the mistake,
``a_update_uses='post'``) after the mistake is folded into the Gram matrix,
without it (``'pre'``) before. When there is no compiled update
(``kind`` = ``KIND_NONE``) or its matrix is not finite, the kernel stops there
and returns the index of the next row, with the same state the numpy path
expects: for ``'post'`` the Gram tracking done, for ``'pre'`` not yet; the
learner runs the reference update (and for ``'pre'`` the tracking) and calls
the kernel again from there.

Both kernels read and write the learner's arrays in place; ``counters`` holds
``[n_rounds, n_mistakes, stopped, a_updates]`` and is updated in place too
(``stopped`` is set to 1 when the kernel returned at a mistake whose A update is
left to the learner; ``a_updates`` counts the A updates done in the kernel).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numba import njit

from learners.kernels import (
    ROW_HELPER,
    ROW_KERNEL,
    KernelRows,
    prefetch_columns,
    prefetch_row_ahead,
    register_warmup,
    row_axpy,
    row_dot,
    warm_learners,
)
from learners.omtl.a_kernels import (
    a_update_into,
    ainv_column,
    load_basis,
    settle,
    store_basis,
    workspace,
)

__all__ = ["warm", "weight_pass"]


@njit(**ROW_KERNEL)
def _track_gram(
    G: np.ndarray, colsum: np.ndarray, u: np.ndarray, c: np.ndarray, xx: float, xsum: float
) -> None:
    """``G += c u^T + u c^T - ||x||^2 c c^T`` and ``colsum += c sum(x)`` (u = W' x after the step)."""
    K = c.shape[0]
    for a in range(K):
        for b in range(K):
            G[a, b] = G[a, b] + c[a] * u[b] + c[b] * u[a] - xx * (c[a] * c[b])
        colsum[a] = colsum[a] + c[a] * xsum


@njit(**ROW_HELPER)
def _scores4(idx: Any, val: np.ndarray, W: np.ndarray, k0: int, u: np.ndarray) -> None:
    """``u[k] = <W[k], x>`` for the rows ``k0..k0+3`` (those that exist), side by side.

    Each sum runs in feature order, as :func:`learners.kernels.row_dot` sums (so the
    results are its bits); the four running sums are independent, which lets the
    processor overlap them instead of waiting on one chain of additions.
    """
    n = W.shape[0] - k0
    if n < 4:  # the last rows of W (K mod 4 of them), one sum each: the same bits
        for r in range(n):
            s = 0.0
            for p in range(val.shape[0]):
                s += val[p] * W[k0 + r, p if idx is None else idx[p]]
            u[k0 + r] = s
        return
    s0 = s1 = s2 = s3 = 0.0
    for p in range(val.shape[0]):
        f = p if idx is None else idx[p]
        v = val[p]
        s0 += v * W[k0, f]
        s1 += v * W[k0 + 1, f]
        s2 += v * W[k0 + 2, f]
        s3 += v * W[k0 + 3, f]
    u[k0] = s0
    u[k0 + 1] = s1
    u[k0 + 2] = s2
    u[k0 + 3] = s3


@njit(**ROW_HELPER)
def _step_and_track(
    idx: Any,
    val: np.ndarray,
    W: np.ndarray,
    c: np.ndarray,
    u: np.ndarray,
    track: bool,
) -> tuple[float, float]:
    """Apply ``W += c x^T`` (Eq. 3.3) and, with ``track``, set ``u = W' x``; ``(||x||^2, sum x)``.

    The same operations as :func:`learners.kernels.row_axpy` row by row and
    :func:`learners.kernels.row_dot` for ``u`` (bit for bit), the dot products four
    rows at a time (:func:`_scores4`).
    """
    for k in range(W.shape[0]):
        if c[k] != 0.0:
            row_axpy(idx, val, W[k], c[k])
    if not track:
        return 0.0, 0.0
    xx = 0.0
    xsum = 0.0
    for p in range(val.shape[0]):
        v = val[p]
        xx += v * v
        xsum += v
    for k0 in range(0, W.shape[0], 4):
        _scores4(idx, val, W, k0, u)
    return xx, xsum


#: What a round leaves to :func:`_weight_pass`: nothing, or the A update of its
#: mistake, before (``'pre'``) or after (``'post'``) the weight step and its tracking.
_NO_UPDATE = 0
_PRE_UPDATE = 1
_POST_UPDATE = 2


@njit(**ROW_KERNEL)
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
    a_every: int,
    track_at_stop: bool,
    c: np.ndarray,
    u: np.ndarray,
    pending: np.ndarray,
    mats: np.ndarray,
    vecs: np.ndarray,
) -> tuple[float, int]:
    """One round (Algorithm 1 lines 4-16) of row ``x`` (``idx`` None: dense) up to its A
    update; ``(score, update)`` with ``update`` one of :data:`_NO_UPDATE`,
    :data:`_PRE_UPDATE` (A from the Gram matrix before the mistake: the weight step and
    its tracking are left to :func:`_finish_pre` after the update) and
    :data:`_POST_UPDATE` (the step and tracking done, the A update due). ``pending``,
    ``mats``, ``vecs``: the A update's workspace, where ``A^{-1}`` may be held
    (:func:`learners.omtl.a_kernels.ainv_column`)."""
    s = row_dot(idx, val, W[t])
    counters[0] += round_step
    if (s >= 0.0) == (label > 0.0):
        return s, _NO_UPDATE
    ainv_column(pending, mats, vecs, Ainv, t, label, c)
    counters[1] += 1
    due = counters[0] >= a_from and counters[1] % a_every == 0
    if due and not track_at_stop:
        return s, _PRE_UPDATE
    xx, xsum = _step_and_track(idx, val, W, c, u, True)
    _track_gram(G, colsum, u, c, xx, xsum)
    if not due:
        return s, _NO_UPDATE
    return s, _POST_UPDATE


@njit(**ROW_HELPER)
def _finish_pre(
    idx: Any,
    val: np.ndarray,
    W: np.ndarray,
    G: np.ndarray,
    colsum: np.ndarray,
    c: np.ndarray,
    u: np.ndarray,
    updated: bool,
) -> None:
    """The weight step of a ``'pre'`` round after its A update: with its Gram tracking when
    the update was done, without it when the update is left to the learner (whose
    reference tail then updates A from the Gram matrix before the mistake and tracks)."""
    if not updated:
        _step_and_track(idx, val, W, c, u, False)
        return
    xx, xsum = _step_and_track(idx, val, W, c, u, True)
    _track_gram(G, colsum, u, c, xx, xsum)


@njit(**ROW_KERNEL)
def _rows(batch: Any, begin: int, scores: np.ndarray, state: Any) -> tuple[int, int]:
    """Rounds from row ``begin`` of ``batch`` (the first six arguments of
    :func:`_weight_pass`) until one leaves an A update: ``(row, update)``, or
    ``(n, _NO_UPDATE)`` at the end. ``state``: what :func:`_round` takes after the row,
    label and task. Compiled without reference counting
    (:data:`learners.kernels.ROW_HELPER`), as the helpers of a round: it counted
    references to a round's dozen arrays on every row."""
    X, indptr, indices, data, y, tasks = batch
    W = state[0]
    for i in range(begin, y.shape[0]):
        if indptr.shape[0] > 0:
            lo, hi = indptr[i], indptr[i + 1]
            if i + 1 < y.shape[0]:  # the weights the next row is scored with
                prefetch_columns(W[tasks[i + 1]], indices, hi, indptr[i + 2])
            scores[i], update = _round(indices[lo:hi], data[lo:hi], y[i], tasks[i], *state)
        else:
            prefetch_row_ahead(X, i)
            scores[i], update = _round(None, X[i], y[i], tasks[i], *state)
        if update != _NO_UPDATE:
            return i, update
    return y.shape[0], _NO_UPDATE


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
    a_every: int,
    track_at_stop: bool,
    kind: int,
    hp: np.ndarray,
    A: np.ndarray,
    L: np.ndarray,
    basis: np.ndarray,
    basis_age: np.ndarray,
    scores: np.ndarray,
) -> int:
    """Rows ``begin..`` (CSR when ``indptr`` is not empty, else the rows of ``X``).

    The rounds run in :func:`_rows`; each A update a round leaves runs here (it may
    call LAPACK, which allocates). Returns the next row: ``n`` when done, or the row
    after a mistake whose A update is left to the learner (then ``counters[2] = 1``;
    see the module docstring). ``basis`` and ``basis_age``: the von Neumann learner's
    eigenpairs of ``log A`` and their count of warm starts
    (:func:`learners.omtl.a_kernels.load_basis`; empty for the other learners).
    """
    c = np.empty(W.shape[0])
    u = np.empty(W.shape[0])
    ws = workspace(W.shape[0])
    mats, vecs, _, _, pending = ws
    load_basis(pending, mats, vecs, basis, basis_age)
    state = (
        W,
        Ainv,
        G,
        colsum,
        counters,
        round_step,
        a_from,
        a_every,
        track_at_stop,
        c,
        u,
        pending,
        mats,
        vecs,
    )
    batch = (X, indptr, indices, data, y, tasks)
    i = begin
    while True:
        i, update = _rows(batch, i, scores, state)
        if update == _NO_UPDATE:
            settle(pending, mats, vecs, A, Ainv, L)
            store_basis(pending, mats, vecs, basis, basis_age)
            return y.shape[0]
        updated = a_update_into(kind, hp, A, Ainv, L, G, colsum, *ws)
        if update == _PRE_UPDATE:
            if indptr.shape[0] > 0:
                lo, hi = indptr[i], indptr[i + 1]
                _finish_pre(indices[lo:hi], data[lo:hi], W, G, colsum, c, u, updated)
            else:
                _finish_pre(None, X[i], W, G, colsum, c, u, updated)
        if not updated:
            settle(pending, mats, vecs, A, Ainv, L)
            store_basis(pending, mats, vecs, basis, basis_age)
            counters[2] = 1
            return i + 1
        counters[3] += 1
        i += 1


@register_warmup
def warm() -> float:
    """Compile (or load from the cache) the pass and its A updates, dense and CSR (the
    compiled steps of :func:`learners.omtl.a_kernels.a_update` among them); the seconds
    taken."""
    from learners.omtl.learners import OMTLLogDet  # the learners import this module

    started = time.perf_counter()
    warm_learners(OMTLLogDet)
    return time.perf_counter() - started


def weight_pass(rows: KernelRows, y: np.ndarray, tasks: np.ndarray, begin: int, *state: Any) -> int:
    """The weight pass over rows ``begin..``; ``state`` as :func:`_weight_pass` takes it."""
    return int(_weight_pass(*rows.kernel_arrays(), y, tasks, begin, *state))
