"""Compiled test-then-train passes of ``rom-pgd``, ``rom-rda`` and ``coml``.

Each pass processes a batch row by row in stream order, dense rows or CSR rows
(the same kernel, compiled twice: numba prunes the branch of the row form that
is absent), and computes exactly what the learner's numpy round does
(``_learn_reference``), in the same order, with the same lazily scaled vectors
(:mod:`learners.rom.scaled`): O(nnz) per event for ROM, O(K nnz) for COML's
global step. Scores are the decisions before each row is learned. Scalars of
the state travel in small arrays (``scal``, ``counts``) updated in place.
The row loops and their helpers allocate nothing and are compiled without
reference counting (:data:`learners.kernels.ROW_HELPER`); COML's scratch row of
coefficients is allocated by :func:`coml_pass`.
"""

from __future__ import annotations

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
    warm_learners,
)
from learners.rom.prox import SQNORM_RECOMPUTE_BELOW
from learners.rom.scaled import RENORMALISE_BELOW

__all__ = ["clear_row", "coml_pass", "note_support", "pgd_pass", "rda_pass", "warm"]


@njit(**ROW_KERNEL)
def _rescale(stored: np.ndarray, scale: float, factor: float) -> float:
    """:func:`learners.rom.scaled.rescale`: the new scale, folded into ``stored`` when tiny."""
    scale *= factor
    if scale < RENORMALISE_BELOW:
        for f in range(stored.shape[0]):
            stored[f] *= scale
        return 1.0
    return scale


@njit(**ROW_HELPER)
def _shrink_factor(norm: float, threshold: float) -> float:
    """:func:`learners.rom.prox.shrink_factor`: ``max(0, 1 - threshold / norm)``."""
    if norm <= threshold or norm <= 0.0:
        return 0.0
    return 1.0 - threshold / norm


@njit(**ROW_HELPER)
def _dots_sq(idx: Any, val: np.ndarray, a: np.ndarray, b: np.ndarray, c: Any) -> Any:
    """``(<x, a>, <x, b>, <x, c>, ||x||^2)`` in one pass, each summed in index order
    (``c`` None: no third vector, 0 in its place; numba compiles that case without it)."""
    sa = sb = sc = sq = 0.0
    if idx is None:
        for f in range(val.shape[0]):
            v = val[f]
            sa += v * a[f]
            sb += v * b[f]
            if c is not None:
                sc += v * c[f]
            sq += v * v
    else:
        for p in range(val.shape[0]):
            v, f = val[p], idx[p]
            sa += v * a[f]
            sb += v * b[f]
            if c is not None:
                sc += v * c[f]
            sq += v * v
    return sa, sb, sc, sq


@njit(**ROW_HELPER)
def _axpy3(
    idx: Any,
    val: np.ndarray,
    a: np.ndarray,
    ca: float,
    b: np.ndarray,
    cb: float,
    c: np.ndarray,
    cc: float,
) -> None:
    """``a += ca x``, ``b += cb x``, ``c += cc x`` in one pass (a zero coefficient skips its vector)."""
    if idx is None:
        for f in range(val.shape[0]):
            v = val[f]
            a[f] += ca * v
            if cb != 0.0:
                b[f] += cb * v
            if cc != 0.0:
                c[f] += cc * v
    else:
        for p in range(val.shape[0]):
            v, f = val[p], idx[p]
            a[f] += ca * v
            if cb != 0.0:
                b[f] += cb * v
            if cc != 0.0:
                c[f] += cc * v


# ------------------------------------------------------------------ ROM-PGD
@njit(**ROW_KERNEL)
def note_support(idx: Any, nnz: int, t: int, sup_idx: np.ndarray, sup_n: np.ndarray) -> None:
    """Remember the entries of ``Q[t]`` written by this row while fewer than the buffer holds."""
    n = sup_n[t]
    if n < 0:
        return
    if idx is None or n + nnz > sup_idx.shape[1]:
        sup_n[t] = -1
        return
    for p in range(nnz):
        sup_idx[t, n + p] = idx[p]
    sup_n[t] = n + nnz


@njit(**ROW_HELPER)
def _scaled_sqnorm(v: np.ndarray, scale: float) -> float:
    """``||scale v||^2``, summed in index order (O(d))."""
    s = 0.0
    for f in range(v.shape[0]):
        e = scale * v[f]
        s += e * e
    return s


@njit(**ROW_KERNEL)
def clear_row(Q: np.ndarray, t: int, sup_idx: np.ndarray, sup_n: np.ndarray) -> None:
    """``Q[t] = 0``: the remembered entries only, or the whole row when they are unknown."""
    n = sup_n[t]
    if n < 0:
        for f in range(Q.shape[1]):
            Q[t, f] = 0.0
    else:
        for j in range(n):
            Q[t, sup_idx[t, j]] = 0.0
    sup_n[t] = 0


@njit(**ROW_HELPER)
def _pgd_row(
    idx: Any,
    val: np.ndarray,
    y: float,
    t: int,
    u: np.ndarray,
    P: np.ndarray,
    Q: np.ndarray,
    u_scale: np.ndarray,
    p_scale: np.ndarray,
    q_scale: np.ndarray,
    q_sqnorm: np.ndarray,
    sup_idx: np.ndarray,
    sup_n: np.ndarray,
    hyper: np.ndarray,
    counts: np.ndarray,
) -> float:
    """One event of zhang2018 Algorithm 1 (Eqs. 6-10); ``u_scale`` is a one-element array."""
    eta, alpha, beta, gamma, m = hyper[0], hyper[1], hyper[2], hyper[3], hyper[4]
    du, dp, dq, sq_x = _dots_sq(idx, val, u, P[t], Q[t])
    ux, px, qx = u_scale[0] * du, p_scale[t] * dp, q_scale[t] * dq
    score = ux + px + qx
    if 1.0 - y * score > 0.0:
        counts[0] += 1
        step = y * eta
        # Eqs. 8 and 10: the norm of q_hat = q_i + step x, then the group shrink factor
        q_stepped = False
        if q_sqnorm[t] == 0.0:
            norm_hat = abs(step) * np.sqrt(sq_x)
        else:
            old, sq_step = q_sqnorm[t], step * step * sq_x
            sq = old + 2.0 * step * qx + sq_step
            if sq < SQNORM_RECOMPUTE_BELOW * (old + sq_step):
                # cancellation: take the step (Eq. 8) and sum the stored q_hat again
                row_axpy(idx, val, Q[t], step / q_scale[t])
                note_support(idx, val.shape[0], t, sup_idx, sup_n)
                sq = _scaled_sqnorm(Q[t], q_scale[t])
                q_stepped = True
            norm_hat = np.sqrt(max(sq, 0.0))
        factor = _shrink_factor(norm_hat, eta * gamma)
        if factor == 0.0 and q_sqnorm[t] > 0.0:
            clear_row(Q, t, sup_idx, sup_n)
        # Eq. 7, Eq. 8 (when q_i survives) and the gradient part of Eq. 6, in one pass
        c_q = 0.0 if factor == 0.0 or q_stepped else step / q_scale[t]
        _axpy3(idx, val, P[t], step / p_scale[t], Q[t], c_q, u, y * eta / m / u_scale[0])
        p_scale[t] = _rescale(P[t], p_scale[t], 1.0 / (1.0 + beta * eta))
        if factor == 0.0:
            q_scale[t] = 1.0
            q_sqnorm[t] = 0.0
        else:
            if not q_stepped:
                note_support(idx, val.shape[0], t, sup_idx, sup_n)
            q_scale[t] = _rescale(Q[t], q_scale[t], factor)
            q_sqnorm[t] = (factor * norm_hat) ** 2
    u_scale[0] = _rescale(u, u_scale[0], 1.0 / (1.0 + alpha * eta / m))
    return score


@njit(**ROW_KERNEL)
def _pgd_rows(
    X: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    u: np.ndarray,
    P: np.ndarray,
    Q: np.ndarray,
    u_scale: np.ndarray,
    p_scale: np.ndarray,
    q_scale: np.ndarray,
    q_sqnorm: np.ndarray,
    sup_idx: np.ndarray,
    sup_n: np.ndarray,
    hyper: np.ndarray,
    counts: np.ndarray,
    scores: np.ndarray,
) -> None:
    if indptr.shape[0] > 0:  # CSR rows (X is a placeholder)
        rows = y.shape[0]
        # by feature (part_pair) P[k, j] and Q[k, j] share a cache line: one prefetch for both
        apart = P.strides[1] == P.itemsize
        for i in range(rows):
            lo, hi = indptr[i], indptr[i + 1]
            if i + 1 < rows:  # the next row's task parts (prefetch_columns)
                prefetch_columns(P[tasks[i + 1]], indices, hi, indptr[i + 2])
                if apart:
                    prefetch_columns(Q[tasks[i + 1]], indices, hi, indptr[i + 2])
            scores[i] = _pgd_row(
                indices[lo:hi], data[lo:hi], y[i], tasks[i], u, P, Q, u_scale, p_scale,
                q_scale, q_sqnorm, sup_idx, sup_n, hyper, counts,
            )  # fmt: skip
    else:
        for i in range(y.shape[0]):
            prefetch_row_ahead(X, i)
            scores[i] = _pgd_row(
                None, X[i], y[i], tasks[i], u, P, Q, u_scale, p_scale, q_scale, q_sqnorm,
                sup_idx, sup_n, hyper, counts,
            )  # fmt: skip


def pgd_pass(rows: KernelRows, y: np.ndarray, tasks: np.ndarray, *state: Any) -> None:
    """ROM-PGD over ``rows``; ``state`` as :func:`_pgd_rows` takes it after ``tasks``."""
    _pgd_rows(*rows.kernel_arrays(), y, tasks, *state)


# ------------------------------------------------------------------ ROM-RDA
@njit(**ROW_HELPER)
def _sqnorm(v: np.ndarray) -> float:  # pragma: no cover - compiled
    """``||v||^2``, summed in index order."""
    s = 0.0
    for j in range(v.shape[0]):
        s += v[j] * v[j]
    return s


@njit(**ROW_HELPER)
def _rda_row(
    idx: Any,
    val: np.ndarray,
    y: float,
    t: int,
    Gu: np.ndarray,
    G: np.ndarray,
    G_sqnorm: np.ndarray,
    clock: np.ndarray,
    hyper: np.ndarray,
    counts: np.ndarray,
) -> float:
    """One event of zhang2018 Algorithm 2 (Eqs. 14-22) in the unnormalised-sum form."""
    kappa, alpha, beta, gamma, K = hyper[0], hyper[1], hyper[2], hyper[3], hyper[4]
    now = clock[0]
    a_u = a_p = a_q = 0.0
    if now > 0.0:
        theta = kappa * np.sqrt(now)
        a_u = 1.0 / (now * alpha + theta)  # Eq. 20
        a_p = 1.0 / (now * beta + theta)  # Eq. 21
        a_q = _shrink_factor(np.sqrt(G_sqnorm[t]), gamma * now) / theta  # Eq. 22
    gu, gx, _, sq_x = _dots_sq(idx, val, Gu, G[t], None)
    score = -(a_u * gu + (a_p + a_q) * gx)
    if 1.0 - y * score > 0.0:
        old = G_sqnorm[t]
        sqnorm = old - 2.0 * y * gx + sq_x
        _axpy3(idx, val, Gu, -y, G[t], -y, Gu, 0.0)
        if sqnorm < SQNORM_RECOMPUTE_BELOW * (old + sq_x):  # cancellation: sum it again
            sqnorm = _sqnorm(G[t])
        G_sqnorm[t] = max(sqnorm, 0.0)
        counts[0] += 1
    clock[0] = now + 1.0 / K
    return score


@njit(**ROW_KERNEL)
def _rda_rows(
    X: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    Gu: np.ndarray,
    G: np.ndarray,
    G_sqnorm: np.ndarray,
    clock: np.ndarray,
    hyper: np.ndarray,
    counts: np.ndarray,
    scores: np.ndarray,
) -> None:
    if indptr.shape[0] > 0:  # CSR rows (X is a placeholder)
        rows = y.shape[0]
        for i in range(rows):
            lo, hi = indptr[i], indptr[i + 1]
            if i + 1 < rows:  # the next row's task part (prefetch_columns)
                prefetch_columns(G[tasks[i + 1]], indices, hi, indptr[i + 2])
            scores[i] = _rda_row(
                indices[lo:hi], data[lo:hi], y[i], tasks[i], Gu, G, G_sqnorm, clock, hyper, counts
            )
    else:
        for i in range(y.shape[0]):
            prefetch_row_ahead(X, i)
            scores[i] = _rda_row(None, X[i], y[i], tasks[i], Gu, G, G_sqnorm, clock, hyper, counts)


def rda_pass(rows: KernelRows, y: np.ndarray, tasks: np.ndarray, *state: Any) -> None:
    """ROM-RDA over ``rows``; ``state`` as :func:`_rda_rows` takes it after ``tasks``."""
    _rda_rows(*rows.kernel_arrays(), y, tasks, *state)


# --------------------------------------------------------------------- COML
@njit(**ROW_HELPER)
def _global_step(
    idx: Any,
    val: np.ndarray,
    u: np.ndarray,
    step: float,
    V: np.ndarray,
    b: np.ndarray,
    v_scale: np.ndarray,
    coef: np.ndarray,
) -> None:
    """``u += step x`` and ``V_k -= (step b_k / s_k) x`` for every task k (O(K nnz)).

    With V laid out by feature (``memory_order``, :func:`_axpy_columns`) a sparse row's
    K updates run as one pass over its non-zeros; by row, one pass per task."""
    row_axpy(idx, val, u, step)
    for k in range(V.shape[0]):
        coef[k] = -step * b[k] / v_scale[k]
    if idx is not None and V.strides[0] == V.itemsize:
        _axpy_columns(idx, val, V.T, coef)
        return
    for k in range(V.shape[0]):
        if coef[k] != 0.0:
            row_axpy(idx, val, V[k], coef[k])


@njit(**ROW_HELPER)
def _axpy_columns(idx: np.ndarray, val: np.ndarray, Vt: np.ndarray, coef: np.ndarray) -> None:
    """``Vt[j, k] += coef_k x_j`` for every non-zero j of a sparse row and every k with
    ``coef_k != 0``: the K updates of :func:`_global_step` on V by feature, whose K values
    of feature j lie side by side in ``Vt[j]`` (vectorised across k). Each value gets the
    one product and sum its row's :func:`~learners.kernels.row_axpy` would give it, in
    the same order over the row's entries, so the bits are those of the K passes; a
    zero coefficient leaves its values untouched, as there (``-0.0 + 0.0`` is ``+0.0``)."""
    for p in range(val.shape[0]):
        v = val[p]
        col = Vt[idx[p]]
        for k in range(col.shape[0]):
            c = coef[k]
            col[k] = col[k] + c * v if c != 0.0 else col[k]


@njit(**ROW_HELPER)
def _coml_row(
    idx: Any,
    val: np.ndarray,
    y: float,
    t: int,
    u: np.ndarray,
    V: np.ndarray,
    v_scale: np.ndarray,
    b: np.ndarray,
    C: float,
    nu: float,
    coef: np.ndarray,
) -> float:
    """One COML [R] event: the global PA-I step, the pull of task t, its PA-I step.

    ``coef`` is scratch space of length K.
    """
    du, dv, _, sq = _dots_sq(idx, val, u, V[t], None)
    score = b[t] * du + v_scale[t] * dv
    if sq == 0.0:
        return score
    loss_u = 1.0 - y * du
    if loss_u > 0.0:
        step = min(C, loss_u / sq) * y
        _global_step(idx, val, u, step, V, b, v_scale, coef)
    b[t] = (b[t] + nu) / (1.0 + nu)
    v_scale[t] = _rescale(V[t], v_scale[t], 1.0 / (1.0 + nu))
    du, dv, _, _ = _dots_sq(idx, val, u, V[t], None)
    loss_c = 1.0 - y * (b[t] * du + v_scale[t] * dv)
    if loss_c > 0.0:
        tau = min(C, (1.0 + nu) * loss_c / sq)
        row_axpy(idx, val, V[t], tau * y / (1.0 + nu) / v_scale[t])
    return score


@njit(**ROW_KERNEL)
def _coml_rows(
    X: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    u: np.ndarray,
    V: np.ndarray,
    v_scale: np.ndarray,
    b: np.ndarray,
    C: float,
    nu: float,
    scores: np.ndarray,
    coef: np.ndarray,
) -> None:
    """COML over the rows; ``coef`` is scratch space of length K (:func:`coml_pass`)."""
    if indptr.shape[0] > 0:  # CSR rows (X is a placeholder)
        for i in range(y.shape[0]):
            lo, hi = indptr[i], indptr[i + 1]
            scores[i] = _coml_row(
                indices[lo:hi], data[lo:hi], y[i], tasks[i], u, V, v_scale, b, C, nu, coef
            )
    else:
        for i in range(y.shape[0]):
            prefetch_row_ahead(X, i)
            scores[i] = _coml_row(None, X[i], y[i], tasks[i], u, V, v_scale, b, C, nu, coef)


def coml_pass(rows: KernelRows, y: np.ndarray, tasks: np.ndarray, *state: Any) -> None:
    """COML over ``rows``; ``state`` as :func:`_coml_rows` takes it after ``tasks``, without
    the scratch ``coef``, allocated here (``state[1]`` is V, K x D)."""
    _coml_rows(*rows.kernel_arrays(), y, tasks, *state, np.empty(state[1].shape[0]))


@register_warmup
def warm() -> float:
    """Compile (or load from the cache) the three passes, dense and CSR, and ROM-PGD's and
    COML's on state laid out by feature; returns the seconds."""
    from learners.rom import CollaborativeMultitask, RobustPGD, RobustRDA  # they import this module

    seconds = warm_learners(RobustPGD, RobustRDA, CollaborativeMultitask)
    return seconds + warm_learners(RobustPGD, CollaborativeMultitask, memory_order="features")
