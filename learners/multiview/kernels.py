"""Compiled (numba) passes over batches of multiview rounds.

Each function runs test-then-train over ``n`` rounds given as the concatenated
preprocessed rounds ``Phi`` (n x D), labels ``y`` and tasks, updating the
learner's state arrays **in place**, and returns the scores before learning.
They repeat the numpy reference methods of :mod:`learners.multiview.mmperc`
and :mod:`learners.multiview.matrix_pnorm` loop for loop (the tests compare
them); what they save is the Python overhead of each round, which dominates
for the small D and K these learners are used with. Ties predict +1; updates
are mistake-driven (docs/algorithms.md Sec. 1.7).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from learners.active.kernels import KernelRows
from learners.kernels import register_warmup, row_axpy, row_dot

__all__ = [
    "lone_view_pass",
    "matrix_pnorm_lone_pass",
    "matrix_pnorm_pass",
    "mmperc_dual_pass",
    "mmperc_primal_pass",
]


@numba.njit(cache=True)
def _mistake(score: float, y: float) -> bool:
    return (score >= 0.0) != (y > 0.0)


@numba.njit(cache=True)
def _coregularizer(phi, lo, hi, K, scale, z):  # type: ignore[no-untyped-def]
    """``z = sqrt(bK)(phi_i - phi/K)`` into ``z`` (cavallanti2010 Fig. 3)."""
    for j in range(phi.shape[0]):
        z[j] = -phi[j] / K
    for j in range(lo, hi):
        z[j] += phi[j]
    for j in range(phi.shape[0]):
        z[j] *= scale


@numba.njit(cache=True)
def mmperc_primal_pass(Phi, y, tasks, offsets, scale, Ainv, v):  # type: ignore[no-untyped-def]
    """MMPERC primal form (Sherman-Morrison on ``A^{-1}``); returns (scores, mistakes)."""
    n, D = Phi.shape
    K = offsets.shape[0] - 1
    scores = np.empty(n)
    z = np.empty(D)
    a = np.empty(D)
    c = np.empty(D)
    mistakes = 0
    for r in range(n):
        phi = Phi[r]
        t = tasks[r]
        lo, hi = offsets[t], offsets[t + 1]
        _coregularizer(phi, lo, hi, K, scale, z)
        c[:] = np.dot(Ainv, z)
        for i in range(D):
            acc_a = 0.0
            for j in range(lo, hi):
                acc_a += Ainv[i, j] * phi[j]
            a[i] = acc_a
        va = 0.0
        vc = 0.0
        za = 0.0
        zc = 0.0
        for i in range(D):
            va += v[i] * a[i]
            vc += v[i] * c[i]
            za += z[i] * a[i]
            zc += z[i] * c[i]
        denom = 1.0 + zc
        margin = va - vc * za / denom
        scores[r] = margin
        if _mistake(margin, y[r]):
            for i in range(D):
                ci = c[i] / denom
                for j in range(D):
                    Ainv[i, j] -= ci * c[j]
            for j in range(lo, hi):
                v[j] += y[r] * phi[j]
            mistakes += 1
    return scores, mistakes


@numba.njit(cache=True)
def mmperc_dual_pass(Phi, y, tasks, offsets, scale, Z, Q, a, v, s):  # type: ignore[no-untyped-def]
    """MMPERC dual form (Sec. 6.1); buffers must hold ``s + n`` mistakes. Returns (scores, s)."""
    n, D = Phi.shape
    K = offsets.shape[0] - 1
    scores = np.empty(n)
    z = np.empty(D)
    cap = Z.shape[0]
    k = np.empty(cap)
    g = np.empty(cap)
    u = np.empty(cap)
    qg = np.empty(cap)
    for r in range(n):
        phi = Phi[r]
        t = tasks[r]
        lo, hi = offsets[t], offsets[t + 1]
        _coregularizer(phi, lo, hi, K, scale, z)
        if s:
            k[:s] = np.dot(Z[:s], z)
        for q in range(s):
            acc_g = 0.0
            for j in range(lo, hi):
                acc_g += Z[q, j] * phi[j]
            g[q] = acc_g
        ku = 0.0
        au = 0.0
        ug = 0.0
        aqg = 0.0
        for q in range(s):
            acc_u = 0.0
            acc_qg = 0.0
            for m in range(s):
                acc_u += Q[q, m] * k[m]
                acc_qg += Q[q, m] * g[m]
            u[q] = acc_u
            qg[q] = acc_qg
        for q in range(s):
            ku += k[q] * u[q]
            au += a[q] * u[q]
            ug += u[q] * g[q]
            aqg += a[q] * qg[q]
        zz = 0.0
        alpha = 0.0
        for j in range(D):
            zz += z[j] * z[j]
            alpha += v[j] * z[j]
        gamma = 0.0
        own = 0.0
        for j in range(lo, hi):
            gamma += z[j] * phi[j]
            own += v[j] * phi[j]
        sigma = 1.0 + zz - ku
        if sigma < 1.0:  # >= 1 in exact arithmetic; rounding takes it below on huge rows
            sigma = 1.0
        margin = own - aqg - (au - alpha) * (ug - gamma) / sigma
        scores[r] = margin
        if _mistake(margin, y[r]):
            for q in range(s):
                uq = u[q] / sigma
                for m in range(s):
                    Q[q, m] += u[m] * uq
            for q in range(s):
                Q[q, s] = -u[q] / sigma
                Q[s, q] = Q[q, s]
            Q[s, s] = 1.0 / sigma
            for j in range(D):
                Z[s, j] = z[j]
            for q in range(s):
                a[q] += y[r] * g[q]
            a[s] = alpha + y[r] * gamma
            for j in range(lo, hi):
                v[j] += y[r] * phi[j]
            s += 1
    return scores, s


@numba.njit(cache=True)
def _link(B, p, P, tmp):  # type: ignore[no-untyped-def]
    """``P = (B/tr B)^{p-1}``; returns ``c = (tr (B/tr B)^p)^{1/p-1}`` (see ``schatten_link``)."""
    K = B.shape[0]
    if p == 1:
        for i in range(K):
            for j in range(K):
                P[i, j] = 1.0 if i == j else 0.0
        return 1.0
    tr = 0.0
    for i in range(K):
        tr += B[i, i]
    if tr <= 0.0:
        for i in range(K):
            for j in range(K):
                P[i, j] = 0.0
        return 0.0
    for i in range(K):
        for j in range(K):
            P[i, j] = B[i, j] / tr
    for _ in range(p - 2):
        for i in range(K):
            for j in range(K):
                acc = 0.0
                for m in range(K):
                    acc += P[i, m] * B[m, j]
                tmp[i, j] = acc / tr
        for i in range(K):
            for j in range(K):
                P[i, j] = tmp[i, j]
    trace_p = 0.0
    for i in range(K):
        for j in range(K):
            trace_p += P[i, j] * B[i, j] / tr
    return math.pow(trace_p, 1.0 / p - 1.0)


@numba.njit(cache=True)
def matrix_pnorm_pass(Phi, y, tasks, p, per_task, V, B):  # type: ignore[no-untyped-def]
    """2p-norm matrix Perceptron (Sec. 7); ``V`` holds ``V^T`` (K x d). Returns (scores, mistakes)."""
    n = Phi.shape[0]
    K, d = V.shape
    scores = np.empty(n)
    C = np.empty((K, K))
    P = np.empty((K, K))
    tmp = np.empty((K, K))
    mistakes = 0
    c = 0.0
    for r in range(n):
        X = Phi[r].reshape((K, d))
        t = tasks[r]
        if r == 0 or _mistake(scores[r - 1], y[r - 1]):  # only a mistake moves B
            c = _link(B, p, P, tmp)
        for i in range(K):
            for j in range(K):
                acc = 0.0
                for f in range(d):
                    acc += V[i, f] * X[j, f]
                C[i, j] = acc
        score = 0.0
        if per_task:
            for i in range(K):
                score += P[i, t] * C[i, t]
        else:
            for i in range(K):
                for j in range(K):
                    score += P[i, j] * C[i, j]
        score *= c
        scores[r] = score
        if not _mistake(score, y[r]):
            continue
        mistakes += 1
        yr = y[r]
        if per_task:
            for i in range(K):
                B[i, t] += yr * C[i, t]
                B[t, i] += yr * C[i, t]
            xx = 0.0
            for f in range(d):
                xx += X[t, f] * X[t, f]
                V[t, f] += yr * X[t, f]
            B[t, t] += xx
        else:
            for i in range(K):
                for j in range(K):
                    xx = 0.0
                    for f in range(d):
                        xx += X[i, f] * X[j, f]
                    B[i, j] += yr * (C[i, j] + C[j, i]) + xx
            for i in range(K):
                for f in range(d):
                    V[i, f] += yr * X[i, f]
    return scores, mistakes


@numba.njit(cache=True)
def matrix_pnorm_lone_pass(
    rows: KernelRows,
    y: np.ndarray,
    tasks: np.ndarray,
    p: int,
    per_task: bool,
    V: np.ndarray,
    B: np.ndarray,
) -> tuple[np.ndarray, int]:  # pragma: no cover - compiled
    """:func:`matrix_pnorm_pass` over interleaved events, each the round whose only
    non-zero view is row r of the preprocessed batch ``rows`` (dense or CSR), for view
    ``tasks[r]``, in O(K nnz + K^2) per event instead of O(K^2 d).

    In such a round only column t of ``C = V^T X`` is non-zero, so the score (both label
    kinds) is ``c sum_i P[i, t] C[i, t]``, and a mistake changes row t of ``V`` and row
    and column t of ``B`` only. Each quantity is summed in the order of
    :func:`matrix_pnorm_pass`, which adds the round's zero terms as exact zeros, and the
    entries of ``B`` outside row and column t, which it changes by ``+0.0``, are left
    alone: the scores and state equal that pass on the rounds, bit for bit. The link
    ``(c, P)``, O(K^3 p), is computed again only after a mistake (only a mistake moves
    ``B``). Returns (scores, mistakes).
    """
    dense, X, indptr, indices, data = rows[0], rows[1], rows[2], rows[3], rows[4]
    n = y.shape[0]
    K = V.shape[0]
    scores = np.empty(n)
    Ct = np.empty(K)
    P = np.empty((K, K))
    tmp = np.empty((K, K))
    mistakes = 0
    c = 0.0
    for r in range(n):
        if r == 0 or _mistake(scores[r - 1], y[r - 1]):  # B moved: the link anew
            c = _link(B, p, P, tmp)
        if dense:
            scores[r] = _pnorm_lone(None, X[r], tasks[r], y[r], per_task, V, B, c, P, Ct)
        else:
            lo, hi = indptr[r], indptr[r + 1]
            scores[r] = _pnorm_lone(
                indices[lo:hi], data[lo:hi], tasks[r], y[r], per_task, V, B, c, P, Ct
            )
        mistakes += _mistake(scores[r], y[r])
    return scores, mistakes


@numba.njit(cache=True)
def _pnorm_lone(
    cols: np.ndarray | None,
    vals: np.ndarray,
    t: int,
    yr: float,
    per_task: bool,
    V: np.ndarray,
    B: np.ndarray,
    c: float,
    P: np.ndarray,
    Ct: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """One event of :func:`matrix_pnorm_lone_pass` (``cols`` None: a dense row) with the
    link ``(c, P)`` of the current ``B``; returns its score, having learned it."""
    K = V.shape[0]
    for i in range(K):
        Ct[i] = row_dot(cols, vals, V[i])
    score = 0.0
    for i in range(K):
        score += P[i, t] * Ct[i]
    score *= c
    if not _mistake(score, yr):
        return score
    xx = row_dot(None, vals, vals)  # ||x||^2 in order, as the rounds pass sums it
    if per_task:
        for i in range(K):
            B[i, t] += yr * Ct[i]
            B[t, i] += yr * Ct[i]
        B[t, t] += xx
    else:
        for i in range(K):
            if i != t:
                B[i, t] += yr * (Ct[i] + 0.0) + 0.0
                B[t, i] += yr * (0.0 + Ct[i]) + 0.0
        B[t, t] += yr * (Ct[t] + Ct[t]) + xx
    row_axpy(cols, vals, V[t], yr)
    return score


# The two baselines (multiview-concat, multiview-independent) on the views of their
# weight vector ``w``: view j is the block ``w[offsets[j]:offsets[j + 1]]``. A view's
# margin is summed in feature order, one term after the other (``learners.kernels.row_dot``,
# no reassociation), so a dense view, the same view as its non-zeros and a zero view
# (margin exactly 0) give the same sums wherever they are computed: an interleaved event
# equals the round whose other views are zero, bit for bit (learners.checks.multiview).
@numba.njit(cache=True)
def lone_view_pass(
    rows: KernelRows,
    y: np.ndarray,
    tasks: np.ndarray,
    offsets: np.ndarray,
    w: np.ndarray,
    zero_views_err: bool,
) -> tuple[np.ndarray, int]:  # pragma: no cover - compiled
    """Test-then-train over interleaved events, each the round in which only view
    ``tasks[r]`` (row r of the preprocessed batch ``rows``, dense or CSR) was observed:
    the score is that view's margin; a mistake adds ``y x`` to its block. With
    ``zero_views_err`` (multiview-independent with shared labels) each of the other
    K - 1 views, whose margin is exactly 0 and predicts +1, also counts a mistake on a
    negative label (its update adds zeros). O(nnz) per event; returns the scores and the
    mistakes counted."""
    dense, X, indptr, indices, data = rows[0], rows[1], rows[2], rows[3], rows[4]
    n = y.shape[0]
    K = offsets.shape[0] - 1
    scores = np.empty(n)
    mistakes = 0
    for r in range(n):
        block = w[offsets[tasks[r]] : offsets[tasks[r] + 1]]
        if dense:
            scores[r] = _perceptron_event(None, X[r], block, y[r])
        else:
            lo, hi = indptr[r], indptr[r + 1]
            scores[r] = _perceptron_event(indices[lo:hi], data[lo:hi], block, y[r])
        mistakes += _mistake(scores[r], y[r])
        if zero_views_err and not y[r] > 0.0:
            mistakes += K - 1
    return scores, mistakes


@numba.njit(cache=True, inline="always")
def _perceptron_event(
    idx: np.ndarray | None, val: np.ndarray, w: np.ndarray, label: float
) -> float:  # pragma: no cover - compiled
    """The margin ``<w, x>``, then ``w += label x`` on a mistake; returns the margin.
    Inlined: called per event, a compiled call cost :func:`lone_view_pass` 15% at d = 100."""
    s = row_dot(idx, val, w)
    if _mistake(s, label):
        row_axpy(idx, val, w, label)
    return s


@register_warmup
def warm() -> None:
    """Compile (or load from the cache) the passes over rounds: ``mmperc`` in both forms
    and ``matrix-pnorm``, each learning a batch of two rounds and then one round (the
    passes over interleaved events are warmed with every learner's defaults)."""
    from learners.multiview import MatrixPNormPerceptron, MMPerc  # they import this module

    wide = [
        np.array([[1.0, 0.0, 2.0], [0.5, 2.0, 0.0]]),
        np.array([[0.0, 1.0, 0.0], [1.0, 0.0, -1.0]]),
    ]
    narrow = [wide[0][:, :2], wide[1]]
    y, tasks = np.array([1.0, -1.0]), np.array([0, 1])
    for learner, views in (
        (MMPerc(n_features=2, n_tasks=2, task_dims=[2, 3], form="primal"), narrow),
        (MMPerc(n_features=2, n_tasks=2, task_dims=[2, 3], form="dual"), narrow),
        (MatrixPNormPerceptron(n_features=3, n_tasks=2), wide),
    ):
        learner.score_and_learn_views_many(views, y, tasks)
        learner.score_and_learn_views([view[0] for view in views], -1.0, 1)
