"""The grid's passes over a sparse row, eight configurations at a time (docs/algorithms.md Sec. 11.4).

On a state laid out by feature (:mod:`learners.adaptive.layout`) the M weights of a
feature lie side by side, then its M accumulators. The passes here read and write them
as lane vectors (:mod:`learners.lanes`): per non-zero of the row and per group of eight
configurations, one load or store of each part's weights or accumulators and one vector
operation per step of the update, where the configuration-by-configuration loops of
:mod:`learners.adaptive.kernels` make M scalar passes over the row, each reading every
entry by its feature index. A group shorter than eight (the last one when M is not a
multiple of eight) is read and written through masked loads and stores: nothing past
the M configurations of a feature is touched.

Each lane computes what the configuration's scalar step computes, in the same order:
the scores ``<u_0, x> + <u_k, x>`` sum the row's products one by one in row order
(lane m's sum is the scalar sum of configuration m); the first-order rates are
``(eta q_p) / sqrt(G_j)`` per part (the reference's ``eta / (s_j sqrt(G_j))`` to
rounding); AROW's variance is ``Sigma r / (r + x^2 Sigma)``. A lane whose configuration
does not move on this row (a zero gradient, a hinge or AROW margin past 1, an AROW lane in
the first-order steps and the reverse, the per-task part of a pooled ``b = 0`` lane)
gets a zero rate or step, so it keeps its values: the accumulator adds ``0 x^2`` and
the weight ``0 x``.

The per-configuration scalars between the passes (gradient squares, the step sizes of
:func:`learners.adaptive.steps.invariant_step_compiled`, AROW's ``ay``) are computed by
the caller, :func:`learners.adaptive.kernels._grid_row`, in a scratch laid out by
:func:`scratch_size`: the M scores (``M8`` entries, M rounded up to a multiple of
eight), eight vectors of ``M8`` entries, then each part's rates, ``M8`` per non-zero of
the row.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from learners.kernels import ROW_HELPER, ROW_KERNEL
from learners.lanes import (
    LANES,
    lanes_add,
    lanes_div,
    lanes_load,
    lanes_load_first,
    lanes_mul,
    lanes_splat,
    lanes_sqrt,
    lanes_store,
    lanes_store_first,
    lanes_where_nonzero,
    lanes_where_positive,
)

__all__ = [
    "A0",
    "AK",
    "AROW_LANE",
    "GG0",
    "GGK",
    "H0",
    "HK",
    "SLOPE",
    "grid_rates",
    "grid_scores",
    "grid_updates",
    "lane_vector",
    "padded",
    "scratch_size",
    "scratch_width",
]

#: The scratch's per-configuration vectors (index v of :func:`lane_vector`): the squared
#: gradient of the shared and of the per-task part (0: the part does not move), 1 on
#: AROW lanes, the logistic slope term, both parts' ``sum x_j^2 rate_j`` (AROW: the
#: variance sums), and both parts' step factors.
GG0, GGK, AROW_LANE, SLOPE, H0, HK, A0, AK = range(8)
_VECTORS = 8
_F = 8  # bytes per float64


@njit(**ROW_KERNEL)
def padded(M: int) -> int:  # pragma: no cover - compiled
    """M rounded up to a multiple of :data:`~learners.lanes.LANES`."""
    return (M + LANES - 1) // LANES * LANES


@njit(**ROW_KERNEL)
def scratch_size(M: int, width: int) -> int:  # pragma: no cover - compiled
    """Entries of the scores-and-scratch array of a grid on rows of up to ``width``
    non-zeros (module docstring)."""
    M8 = padded(M)
    return M8 * (1 + _VECTORS + 2 * width)


@njit(**ROW_KERNEL)
def scratch_width(M: int, size: int) -> int:  # pragma: no cover - compiled
    """The longest row a scratch of ``size`` entries holds the rates of (the inverse of
    :func:`scratch_size`)."""
    return (size // padded(M) - 1 - _VECTORS) // 2


@njit(**ROW_KERNEL)
def lane_vector(M: int, v: int) -> int:  # pragma: no cover - compiled
    """Index of the first entry of the scratch's vector ``v`` (:data:`GG0` ...)."""
    M8 = padded(M)
    return M8 + v * M8


@njit(**ROW_HELPER)
def _rates_at(M: int, part: int, width: int, p: int) -> int:  # pragma: no cover - compiled
    """Index of the first rate of non-zero p of ``part`` (0 shared, 1 per-task)."""
    M8 = padded(M)
    return M8 * (1 + _VECTORS) + (part * width + p) * M8


@njit(error_model="numpy", **ROW_KERNEL)
def grid_scores(
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
    k: int,
    U0: np.ndarray,
    U: np.ndarray,
    scores: np.ndarray,
    start: int,
    stop: int,
) -> None:  # pragma: no cover - compiled
    """``scores[m] = <u_0m, x> + <u_km, x>`` for the configurations ``start <= m < stop``
    (``start`` a multiple of eight), each sum in row order: a lane's sum does not depend on
    the others, so a prediction computes only the leader's group."""
    s1, t1, t2 = U0.strides[1], U.strides[1], U.strides[2]
    zero = lanes_splat(0.0)
    for c in range(start, stop, LANES):
        count = min(LANES, stop - c)
        a0 = zero
        ak = zero
        base0 = c * _F
        basek = c * _F + k * t1
        for p in range(n):
            j = idx[p]
            x = lanes_splat(val[p])
            a0 = lanes_add(a0, lanes_mul(x, lanes_load_first(U0, base0 + j * s1, count)))
            ak = lanes_add(ak, lanes_mul(x, lanes_load_first(U, basek + j * t2, count)))
        lanes_store_first(scores, c * _F, lanes_add(a0, ak), count)


@njit(error_model="numpy", **ROW_HELPER)
def grid_rates(
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
    k: int,
    G0: np.ndarray,
    G: np.ndarray,
    q: np.ndarray,
    etas: np.ndarray,
    scratch: np.ndarray,
    width: int,
) -> None:  # pragma: no cover - compiled
    """First-order lanes: ``G_j += g^2 x_j^2`` and ``rate_p = (eta q_p) / sqrt(G_j)`` for
    each part that moves (else rate 0), stored in the scratch; ``H0``/``HK`` receive each
    part's ``sum_p x_p^2 rate_p``. AROW lanes: their variances unchanged, ``H0``/``HK``
    receive ``sum_p x_p^2 Sigma_j`` (the ``x^T Sigma x`` of each part)."""
    M = G0.shape[0]
    s1, t1, t2 = G0.strides[1], G.strides[1], G.strides[2]
    zero = lanes_splat(0.0)
    for c in range(0, M, LANES):
        count = min(LANES, M - c)
        at = c * _F
        gg0 = lanes_load(scratch, (lane_vector(M, GG0) + c) * _F)
        ggk = lanes_load(scratch, (lane_vector(M, GGK) + c) * _F)
        arow = lanes_load(scratch, (lane_vector(M, AROW_LANE) + c) * _F)
        eta = lanes_load_first(etas, at, count)
        h0 = zero
        hk = zero
        for p in range(n):
            j = idx[p]
            x = val[p]
            x2 = lanes_splat(x * x)
            off0 = at + j * s1
            offk = at + k * t1 + j * t2
            g0 = lanes_add(lanes_load_first(G0, off0, count), lanes_mul(gg0, x2))
            gk = lanes_add(lanes_load_first(G, offk, count), lanes_mul(ggk, x2))
            lanes_store_first(G0, off0, g0, count)
            lanes_store_first(G, offk, gk, count)
            e = lanes_mul(eta, lanes_splat(q[p]))
            r0 = lanes_where_positive(gg0, lanes_div(e, lanes_sqrt(g0)), zero)
            rk = lanes_where_positive(ggk, lanes_div(e, lanes_sqrt(gk)), zero)
            lanes_store(scratch, (_rates_at(M, 0, width, p) + c) * _F, r0)
            lanes_store(scratch, (_rates_at(M, 1, width, p) + c) * _F, rk)
            h0 = lanes_add(h0, lanes_mul(x2, lanes_where_positive(arow, g0, r0)))
            hk = lanes_add(hk, lanes_mul(x2, lanes_where_positive(arow, gk, rk)))
        lanes_store(scratch, (lane_vector(M, H0) + c) * _F, h0)
        lanes_store(scratch, (lane_vector(M, HK) + c) * _F, hk)


@njit(error_model="numpy", **ROW_HELPER)
def grid_updates(
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
    k: int,
    U0: np.ndarray,
    U: np.ndarray,
    G0: np.ndarray,
    G: np.ndarray,
    ridges: np.ndarray,
    scratch: np.ndarray,
    width: int,
) -> None:  # pragma: no cover - compiled
    """Every lane's weight step with the factors ``A0``/``AK`` of the scratch: first-order
    ``u_j += (a rate_p) x_j`` (0 where a = 0); AROW ``u_j += (ay Sigma_j) x_j``, then
    ``Sigma_j <- Sigma_j r / (r + x_j^2 Sigma_j)`` where its factor is not 0."""
    M = U0.shape[0]
    s1, t1, t2 = U0.strides[1], U.strides[1], U.strides[2]
    for c in range(0, M, LANES):
        count = min(LANES, M - c)
        at = c * _F
        a0 = lanes_load(scratch, (lane_vector(M, A0) + c) * _F)
        ak = lanes_load(scratch, (lane_vector(M, AK) + c) * _F)
        arow = lanes_load(scratch, (lane_vector(M, AROW_LANE) + c) * _F)
        moves0 = lanes_mul(arow, a0)  # non-zero on the AROW lanes that step
        movesk = lanes_mul(arow, ak)
        r = lanes_load_first(ridges, at, count)
        zero = lanes_splat(0.0)
        for p in range(n):
            j = idx[p]
            x = val[p]
            xv = lanes_splat(x)
            x2 = lanes_splat(x * x)
            off0 = at + j * s1
            offk = at + k * t1 + j * t2
            g0 = lanes_load_first(G0, off0, count)
            gk = lanes_load_first(G, offk, count)
            r0 = lanes_load(scratch, (_rates_at(M, 0, width, p) + c) * _F)
            rk = lanes_load(scratch, (_rates_at(M, 1, width, p) + c) * _F)
            # a lane whose step was skipped (factor 0) may hold an infinite rate (h infinite,
            # docs/algorithms.md Sec. 11.2): its step is 0, not 0 * inf
            s0 = lanes_where_nonzero(a0, lanes_mul(a0, r0), zero)
            sk = lanes_where_nonzero(ak, lanes_mul(ak, rk), zero)
            d0 = lanes_where_positive(arow, lanes_mul(a0, g0), s0)
            dk = lanes_where_positive(arow, lanes_mul(ak, gk), sk)
            w0 = lanes_add(lanes_load_first(U0, off0, count), lanes_mul(d0, xv))
            wk = lanes_add(lanes_load_first(U, offk, count), lanes_mul(dk, xv))
            lanes_store_first(U0, off0, w0, count)
            lanes_store_first(U, offk, wk, count)
            v0 = lanes_div(lanes_mul(g0, r), lanes_add(r, lanes_mul(x2, g0)))
            vk = lanes_div(lanes_mul(gk, r), lanes_add(r, lanes_mul(x2, gk)))
            lanes_store_first(G0, off0, lanes_where_nonzero(moves0, v0, g0), count)
            lanes_store_first(G, offk, lanes_where_nonzero(movesk, vk, gk), count)
