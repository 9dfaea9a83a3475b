"""The compiled batch pass of the adaptive learners (docs/algorithms.md Sec. 11).

:func:`adaptive_pass` runs every configuration over a batch in one sequential
pass, row by row in exactly the order of the numpy reference
(:func:`learners.adaptive.reference.learn`): per row ``(x, y, k)`` it scores x
with every configuration, reports the leader's score (the configuration with
the fewest progressive mistakes so far, the first on ties), then updates the
normaliser and every configuration. The cost is O(M nnz(x)) per row whatever
K and D (the rows are read through :func:`learners.active.kernels.load_row`,
dense or CSR, which also appends the bias and scales rows to unit length when the
call asks; a member reads a dense row straight from the batch in its first pass,
:func:`_dense_member_row`). Per row a member makes three passes over a dense row:
the copy, both scores and the normaliser's inverse; each part's accumulator and
rate with one division for both parts; both parts' weight updates (AROW: its
variances, then both parts' updates). Helpers whose loops divide are compiled with
numpy's error model (no zero-division check), without which they do not
vectorise. A loop that reads or writes the state by a sparse row's feature indices does
not vectorise either, so on a sparse row the loops that take square roots or divide
(:func:`_inverse`, :func:`_fused_rates`, :func:`_fused_rates2`) run in two: the first
gathers the row's entries of the state into a row buffer (updating the accumulators as
it goes), the second divides along the buffer, where it vectorises; the same arithmetic
on the same numbers, so the same results, 1.0-1.4 times the events per second on
sparse rows, the most when the state fits the cache (docs/algorithms.md Sec. 11.5). A
grid of at least :data:`LANES_FROM` configurations laid out by feature runs its sparse
rows across configurations instead (:func:`_grid_row`, the passes of
:mod:`learners.adaptive.lanes_kernels`: docs/algorithms.md Sec. 11.4, "Lanes").
The row loops and every per-row helper are compiled without reference counting
(:data:`learners.kernels.ROW_HELPER`: they allocate nothing; the two entry points
allocate the row buffers and hand them down). :func:`warm` compiles it on tiny inputs
(``cache=True`` keeps the machine code on disk, in a directory keyed by the source of
every compiled module, :mod:`learners.compile_cache`: a change of
:mod:`learners.adaptive.steps` or of the row helpers of :mod:`learners.active.kernels`,
which these kernels inline, compiles them afresh).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.active.kernels import KernelPass, load_row, warm_call, warm_rows
from learners.adaptive.lanes_kernels import (
    A0,
    AK,
    AROW_LANE,
    GG0,
    GGK,
    H0,
    HK,
    SLOPE,
    grid_rates,
    grid_scores,
    grid_updates,
    lane_vector,
    padded,
    scratch_size,
    scratch_width,
)
from learners.adaptive.layout import config_pair
from learners.adaptive.reference import FOLD_BELOW
from learners.adaptive.steps import AROW, invariant_step_compiled, slope_terms_compiled
from learners.kernels import (
    ROW_HELPER,
    ROW_KERNEL,
    prefetch,
    prefetch_row_ahead,
    register_warmup,
)
from learners.lanes import LANES

#: The outlier parts ``(gammas, Q, Qs, Qn)`` (docs/algorithms.md Sec. 11.7): zhang2018's
#: group-lasso weight per configuration and ``q_k = Qs[m, k] Q[m, k]`` with ``Qn = ||q_k||^2``;
#: ``Q`` has shape (M, 0, 0) for a learner without outlier parts.
OutlierArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: Sums may be reassociated (and so run in SIMD lanes), as in the other kernels; a sum
#: then differs from the reference's in its last bits only.
#:
#: No loop under these flags both stores and sums. LLVM vectorises a loop that stores
#: behind a run-time check that the arrays it writes lie apart from those it reads, and
#: runs the scalar loop when they are close in memory (within a few cache lines). With
#: reassociated sums the two loops add in different orders, so the result would depend on
#: where the allocator put the arrays: the same rows could give different last bits from
#: one run to the next, and a replay would not be bit-identical. So each such function
#: stores in one loop (element-wise arithmetic, the same in either form) and sums in
#: another, which reads only and always runs the same vector code.
_SUMS = {"reassoc"}

__all__ = [
    "WARM_BASES",
    "ConfigArrays",
    "OutlierArrays",
    "StateArrays",
    "adaptive_pass",
    "adaptive_scores",
    "dense_row",
    "leader",
    "learn_row",
    "row_width",
    "warm",
    "warm_state",
]


@njit(**ROW_KERNEL)
def leader(mistakes: np.ndarray) -> int:  # pragma: no cover - compiled
    """The configuration with the fewest mistakes (the first on ties)."""
    best = 0
    for m in range(1, mistakes.shape[0]):
        if mistakes[m] < mistakes[best]:
            best = m
    return best


# Every row helper takes ``idx``: the feature indices of a sparse row, or None for a
# dense row whose every entry is non-zero (then entry p is feature p). numba compiles one
# version per case and prunes the ``is None`` branch, so the dense loops are contiguous
# and vectorise.
@njit(cache=True, inline="always")
def _at(idx: np.ndarray | None, p: int) -> int:  # pragma: no cover - compiled
    if idx is None:
        return p
    return idx[p]


@njit(fastmath=_SUMS, **ROW_HELPER)
def _dot(
    w: np.ndarray, idx: np.ndarray | None, val: np.ndarray, n: int
) -> float:  # pragma: no cover
    s = 0.0
    for p in range(n):
        s += val[p] * w[_at(idx, p)]
    return s


@njit(fastmath=_SUMS, **ROW_HELPER)
def _weighted_sqnorm(val: np.ndarray, weights: np.ndarray, n: int) -> float:  # pragma: no cover
    """``sum_p val_p^2 weights_p`` over the first n entries."""
    s = 0.0
    for p in range(n):
        s += val[p] * val[p] * weights[p]
    return s


@njit(fastmath=_SUMS, **ROW_HELPER)
def _scaled_sqnorm(val: np.ndarray, q: np.ndarray, n: int) -> float:  # pragma: no cover
    """``sum_p (val_p q_p)^2``: with ``q_p = 1 / s_j`` the row's ``sum_j (x_j / s_j)^2``."""
    s = 0.0
    for p in range(n):
        v = val[p] * q[p]
        s += v * v
    return s


@njit(**ROW_HELPER)
def _axpy(
    w: np.ndarray, a: float, coef: np.ndarray, idx: np.ndarray | None, val: np.ndarray, n: int
) -> None:  # pragma: no cover - compiled
    """``w_j += (a coef_p) x_j`` for the row's coordinates."""
    for p in range(n):
        w[_at(idx, p)] += (a * coef[p]) * val[p]


@njit(**ROW_HELPER)
def _nonzeros(dense: bool, idx: np.ndarray, val: np.ndarray, n: int) -> int:  # pragma: no cover
    """Keep the non-zero entries of a loaded row, with their feature indices (the
    canonical form the reference works on); returns their number."""
    c = 0
    for p in range(n):
        v = val[p]
        if v != 0.0:
            idx[c] = p if dense else idx[p]
            val[c] = v
            c += 1
    return c


@njit(**ROW_HELPER)
def _all_nonzero(val: np.ndarray, n: int) -> bool:  # pragma: no cover - compiled
    zeros = 0
    for p in range(n):
        zeros += val[p] == 0.0
    return zeros == 0


@njit(**ROW_HELPER)
def _prefetch_rescaled(
    S: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
    U0: np.ndarray,
    U: np.ndarray,
    losses: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Prefetch the weights :func:`_rescale` will scale for this row (every first-order
    configuration's shared and per-task weights of each feature whose ``s_j`` grows from
    ``s_j > 0``): on a large state they miss the cache, and the scaling's stores would
    otherwise wait for them one after the other."""
    for p in range(n):
        j = idx[p]
        if abs(val[p]) > S[j] > 0.0:
            for m in range(U0.shape[0]):
                if losses[m] != AROW:
                    prefetch(U0[m], j)  # type: ignore[call-arg]  # numba supplies typingctx
                    for k in range(U.shape[1]):
                        prefetch(U[m, k], j)


@njit(**ROW_HELPER)
def _normalise(
    S: np.ndarray,
    q: np.ndarray,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    U0: np.ndarray,
    U: np.ndarray,
    losses: np.ndarray,
    outlier: OutlierArrays,
) -> None:  # pragma: no cover - compiled
    """``s_j = max(s_j, |x_j|)``, first-order weights of feature j times ``s_old / s_new``
    when it grows from ``s_old > 0``; ``q_p = 1 / s_j`` for the row's coordinates."""
    if idx is not None and U0.shape[0] == 1 and losses[0] != AROW:
        # a first-order member: +8% on sparse d = 100,000 (a grid's M (K + 1) lines per feature
        # saturate the outstanding misses, and were 3% slower)
        _prefetch_rescaled(S, idx, val, n, U0, U, losses)
    for p in range(n):
        j = _at(idx, p)
        a = abs(val[p])
        if a > S[j]:
            if S[j] > 0.0:
                _rescale(U0, U, losses, j, S[j] / a, outlier)
            S[j] = a
        q[p] = 1.0 / S[j]


@njit(**ROW_KERNEL)
def _rescale(
    U0: np.ndarray, U: np.ndarray, losses: np.ndarray, j: int, ratio: float, outlier: OutlierArrays
) -> None:  # pragma: no cover - compiled
    """Feature j's shared, per-task and outlier weights of every first-order configuration
    times ``ratio`` (the outlier norms follow)."""
    _, Q, Qs, Qn = outlier
    for m in range(U0.shape[0]):
        if losses[m] != AROW:
            U0[m, j] *= ratio
            for k in range(U.shape[1]):
                U[m, k, j] *= ratio
            for k in range(Q.shape[1]):
                q = Qs[m, k] * Q[m, k, j]
                Qn[m, k] += q * q * (ratio * ratio - 1.0)
                Q[m, k, j] *= ratio


@njit(error_model="numpy", **ROW_HELPER)
def _arow_part(
    u: np.ndarray,
    sigma: np.ndarray,
    ay: float,
    r: float,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
) -> None:  # pragma: no cover - compiled
    """``u_j += ay Sigma_j x_j``, ``Sigma_j <- 1 / (1 / Sigma_j + x_j^2 / r)``, computed as
    ``Sigma_j r / (r + x_j^2 Sigma_j)`` (one division)."""
    for p in range(n):
        j = _at(idx, p)
        x = val[p]
        s = sigma[j]
        u[j] += ay * s * x
        sigma[j] = (s * r) / (r + (x * x) * s)


@njit(**ROW_HELPER)
def _adagrad_rates(
    acc: np.ndarray,
    q: np.ndarray,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    gg: float,
    eta: float,
    rates: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """``G_j += g^2 x_j^2``, ``rates_p = eta / (s_j sqrt(G_j))`` (``q_p = 1 / s_j``) for the
    row's coordinates of one part; returns ``sum_j x_j^2 rates_j`` (its share of ``h / c``)."""
    for p in range(n):
        j = _at(idx, p)
        x = val[p]
        total = acc[j] + gg * (x * x)
        acc[j] = total
        rates[p] = total
    # The square roots as one ufunc call over the contiguous buffer: numba vectorises it
    # (a scalar math.sqrt in the loop above does not), 2-3 times faster at d = 100.
    roots = rates[:n]
    np.sqrt(roots, roots)
    np.divide(q[:n], roots, roots)
    np.multiply(roots, eta, roots)
    return _weighted_sqnorm(val, rates, n)


@njit(**ROW_KERNEL)
def _outlier_step(
    Q: np.ndarray,
    Qs: np.ndarray,
    Qn: np.ndarray,
    m: int,
    k: int,
    a: float,
    rateq: np.ndarray,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    thr: float,
) -> None:  # pragma: no cover - compiled
    """``q_hat = q_k + a rateq x``, then group soft-thresholding by ``thr`` (reference:
    ``reference._outlier_step``)."""
    c = Qs[m, k]
    row = Q[m, k]
    norm2 = Qn[m, k]
    for p in range(n):
        j = _at(idx, p)
        delta = (a * rateq[p]) * val[p]
        norm2 += 2.0 * (c * row[j]) * delta + delta * delta
        row[j] += delta / c
    norm = math.sqrt(max(norm2, 0.0))
    if norm <= thr:
        row[:] = 0.0
        Qs[m, k] = 1.0
        Qn[m, k] = 0.0
        return
    f = 1.0 - thr / norm
    Qs[m, k] = c * f
    Qn[m, k] = norm2 * f * f
    if Qs[m, k] < FOLD_BELOW:
        row *= Qs[m, k]
        Qs[m, k] = 1.0


@njit(**ROW_HELPER)
def _gradient_step(
    loss: int,
    eta: float,
    u0: np.ndarray,
    g0: np.ndarray,
    uk: np.ndarray,
    gk: np.ndarray,
    q: np.ndarray,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    y: float,
    z0: float,
    b: float,
    scale: float,
    rate0: np.ndarray,
    ratek: np.ndarray,
    m: int,
    k: int,
    gamma: float,
    outlier: OutlierArrays,
) -> None:  # pragma: no cover - compiled
    """Adaptive, normalised, invariant step (reference: ``reference.learn``)."""
    g, ez0 = slope_terms_compiled(loss, z0)
    if g == 0.0:
        return
    gg = g * g
    h = _adagrad_rates(g0, q, idx, val, n, gg, eta, rate0)
    if b > 0.0 or gamma > 0.0:
        # ratek holds the outlier rates eta / (s_j sqrt(G_kj)); the per-task part's are b times
        h += (b + (1.0 if gamma > 0.0 else 0.0)) * _adagrad_rates(
            gk, q, idx, val, n, gg, eta, ratek
        )
    h *= scale
    if not _usable(h):  # an infinite h: a rate overflowed (docs/algorithms.md Sec. 11.2)
        return
    a = y * invariant_step_compiled(loss, z0, ez0, h) / h * scale
    _axpy(u0, a, rate0, idx, val, n)
    if b > 0.0:
        _axpy(uk, a * b, ratek, idx, val, n)
    if gamma > 0.0:
        _, Q, Qs, Qn = outlier
        _outlier_step(Q, Qs, Qn, m, k, a, ratek, idx, val, n, eta * gamma)


#: A pass's scratch ``(idx, val, buffers, scores)`` (:func:`_row_buffers`).
RowBuffers = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: The configuration arrays ``(losses, etas, couplings, ridges)``, shape (M,) each.
ConfigArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: The learned state ``(U0, U, G0, G, S, stats, mistakes, duels)`` (``reference.AdaptiveState``).
StateArrays = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]


#: The fewest configurations a grid laid out by feature runs in lanes: a pass in lanes
#: costs about the same for one to eight of them, the configuration-by-configuration
#: loops M times one configuration's (sparse d = 2,000, 100 non-zeros: 4.1 against 4.6 us
#: per row at M = 4, 3.9 against 2.9 us at M = 2).
LANES_FROM = 4


@njit(**ROW_HELPER)
def _in_lanes(state: StateArrays, outlier: OutlierArrays) -> bool:  # pragma: no cover - compiled
    """Whether a grid's rows in their sparse form run in lanes
    (:mod:`learners.adaptive.lanes_kernels`): a grid of at least :data:`LANES_FROM`
    configurations laid out by feature, without outlier parts."""
    return state[0].shape[0] >= LANES_FROM and outlier[1].shape[1] == 0 and _by_feature(state[0])


@njit(**ROW_HELPER)
def score_slots(state: StateArrays, width: int) -> int:  # pragma: no cover - compiled
    """Length of the scores array of a pass on rows of up to ``width`` entries: one score
    per configuration, and on a grid laid out by feature the lanes' scratch after them
    (:func:`learners.adaptive.lanes_kernels.scratch_size`)."""
    M = state[0].shape[0]
    if M >= LANES_FROM and _by_feature(state[0]):
        return scratch_size(M, width)
    return M


@njit(inline="always", **ROW_HELPER)
def _count_and_normalise(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    y: float,
    scores: np.ndarray,
    state: StateArrays,
    losses: np.ndarray,
    outlier: OutlierArrays,
    q: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """What a grid's row does between its scores and its steps (``reference.learn``): each
    configuration's mistake count and its duel with the leader (``duels[m, 0]``: m wrong
    where the leader was right, ``duels[m, 1]``: the other way round; the leader taken
    before the counts move, as the caller's score; docs/algorithms.md Sec. 11.9), then, for a row with entries, the normaliser
    (``q_p = 1 / s_j``) and ``stats``. Returns the scale ``sqrt(t / N)`` (0 for an empty
    row, which learns nothing)."""
    U0, U, _, _, S, stats, mistakes, duels = state
    positive = y > 0.0
    lead_wrong = (scores[leader(mistakes)] >= 0.0) != positive
    for m in range(U0.shape[0]):
        wrong = (scores[m] >= 0.0) != positive
        if wrong:
            mistakes[m] += 1
        if wrong != lead_wrong:
            duels[m, 0 if wrong else 1] += 1
    if n == 0:
        return 0.0
    _normalise(S, q, idx, val, n, U0, U, losses, outlier)
    stats[0] += _scaled_sqnorm(val, q, n)
    stats[1] += 1.0
    return math.sqrt(stats[1] / stats[0])


@njit(**ROW_HELPER)
def _grid_row(
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
    k: int,
    y: float,
    configs: ConfigArrays,
    state: StateArrays,
    outlier: OutlierArrays,
    scratch: np.ndarray,
    buffers: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """:func:`_learn_row` of a sparse row on a grid laid out by feature, its passes over
    the row in lanes (:mod:`learners.adaptive.lanes_kernels`): the scores, the mistake
    counts, the normaliser and ``stats`` as in :func:`_learn_row`, then each
    configuration's gradient, the rates and accumulators of every lane in one pass, each
    configuration's step (reference: ``reference.learn``), and every lane's weight update
    in another. ``scratch`` is the scores array, :func:`score_slots` long."""
    losses, etas, couplings, ridges = configs
    U0, U, G0, G, _, _, mistakes, _ = state
    M = U0.shape[0]
    width = scratch_width(M, scratch.shape[0])
    grid_scores(idx, val, n, k, U0, U, scratch, 0, M)
    out = scratch[leader(mistakes)]
    q = buffers[0]
    scale = _count_and_normalise(idx, val, n, y, scratch, state, losses, outlier, q)
    if n == 0:
        return out
    gg0, ggk, arow = lane_vector(M, GG0), lane_vector(M, GGK), lane_vector(M, AROW_LANE)
    slope, h0, hk = lane_vector(M, SLOPE), lane_vector(M, H0), lane_vector(M, HK)
    a0, ak = lane_vector(M, A0), lane_vector(M, AK)
    for m in range(padded(M)):
        scratch[gg0 + m] = 0.0
        scratch[ggk + m] = 0.0
        scratch[arow + m] = 0.0
        scratch[a0 + m] = 0.0
        scratch[ak + m] = 0.0
    for m in range(M):
        if losses[m] == AROW:
            scratch[arow + m] = 1.0
            continue
        g, ez0 = slope_terms_compiled(losses[m], y * scratch[m])
        scratch[gg0 + m] = g * g
        scratch[ggk + m] = g * g if couplings[m] > 0.0 else 0.0
        scratch[slope + m] = ez0
    grid_rates(idx, val, n, k, G0, G, q, etas, scratch, width)
    for m in range(M):
        b = couplings[m]
        z0 = y * scratch[m]
        if losses[m] == AROW:
            if z0 < 1.0:
                v = scratch[h0 + m] + (scratch[hk + m] if b > 0.0 else 0.0)
                ay = (1.0 - z0) / (v + ridges[m]) * y
                scratch[a0 + m] = ay
                scratch[ak + m] = ay if b > 0.0 else 0.0
        elif scratch[gg0 + m] > 0.0:
            h = (scratch[h0 + m] + b * scratch[hk + m]) * scale
            if _usable(h):  # as _first_order_step
                a = y * invariant_step_compiled(losses[m], z0, scratch[slope + m], h) / h * scale
                scratch[a0 + m] = a
                scratch[ak + m] = a * b
    grid_updates(idx, val, n, k, U0, U, G0, G, ridges, scratch, width)
    return out


@njit(**ROW_HELPER)
def _learn_row(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    k: int,
    y: float,
    configs: ConfigArrays,
    state: StateArrays,
    outlier: OutlierArrays,
    scores: np.ndarray,
    buffers: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """Score one loaded row with every configuration, then learn it; returns the
    leader's score (the order of ``reference.learn``)."""
    losses, etas, couplings, ridges = configs
    U0, U, G0, G, _, _, mistakes, _ = state
    gammas, Q, Qs, _ = outlier
    M = U0.shape[0]
    if idx is not None:  # noqa: SIM102 - numba drops the branch when idx is None only so
        if _in_lanes(state, outlier):
            return _grid_row(idx, val, n, k, y, configs, state, outlier, scores, buffers)
    for m in range(M):
        if idx is None:
            scores[m] = _dot(U0[m], idx, val, n) + _dot(U[m, k], idx, val, n)
        else:
            scores[m] = _dot_touch(U0[m], U[m, k], G0[m], G[m, k], idx, val, n, buffers[0])
        if Q.shape[1] > 0:
            scores[m] += Qs[m, k] * _dot(Q[m, k], idx, val, n)
    out = scores[leader(mistakes)]
    q, rate0, ratek = buffers[0], buffers[1], buffers[2]
    scale = _count_and_normalise(idx, val, n, y, scores, state, losses, outlier, q)
    if n == 0:
        return out
    for m in range(M):
        z0 = y * scores[m]
        if losses[m] == AROW:
            _arow_fused(
                U0[m], G0[m], U[m, k], G[m, k], idx, val, n, y, z0, couplings[m], ridges[m],
                buffers[1:3],
            )  # fmt: skip
        elif gammas[m] == 0.0:
            _first_order_step(
                losses[m],
                etas[m],
                U0[m],
                G0[m],
                U[m, k],
                G[m, k],
                q,
                idx,
                val,
                n,
                y,
                z0,
                couplings[m],
                scale,
                buffers,
            )
        else:
            _gradient_step(
                losses[m],
                etas[m],
                U0[m],
                G0[m],
                U[m, k],
                G[m, k],
                q,
                idx,
                val,
                n,
                y,
                z0,
                couplings[m],
                scale,
                rate0,
                ratek,
                m,
                k,
                gammas[m],
                outlier,
            )
    return out


@njit(fastmath=_SUMS, **ROW_HELPER)
def _dot_touch(
    u0: np.ndarray,
    uk: np.ndarray,
    g0: np.ndarray,
    gk: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
    sink: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """:func:`_dot2` of a sparse row that also reads the accumulators ``g0_j``, ``gk_j``
    the step will need (their sum goes to ``sink[0]``, a scratch entry): on a large state
    their cache misses then overlap with the scores' instead of coming one by one later."""
    s0 = 0.0
    sk = 0.0
    touched = 0.0
    for p in range(n):
        j = idx[p]
        x = val[p]
        s0 += x * u0[j]
        sk += x * uk[j]
        touched += g0[j] + gk[j]
    sink[0] = touched
    return s0 + sk


@njit(fastmath=_SUMS, **ROW_HELPER)
def _dot2(
    u0: np.ndarray, uk: np.ndarray, idx: np.ndarray | None, val: np.ndarray, n: int
) -> float:  # pragma: no cover - compiled
    """``<u0, x> + <uk, x>`` in one pass over the row."""
    s0 = 0.0
    sk = 0.0
    for p in range(n):
        j = _at(idx, p)
        x = val[p]
        s0 += x * u0[j]
        sk += x * uk[j]
    return s0 + sk


@njit(fastmath=_SUMS, error_model="numpy", **ROW_HELPER)
def _inverse(
    S: np.ndarray, idx: np.ndarray | None, val: np.ndarray, q: np.ndarray, n: int
) -> float:  # pragma: no cover - compiled
    """``q_p = 1 / s_j`` and the row's ``sum_j (x_j / s_j)^2`` (as :func:`_scaled_sqnorm`)
    for a normaliser that does not move; returns -1 when some ``|x_j| > s_j`` (it moves)."""
    if idx is None:
        for p in range(n):  # stores only, no sums (see _SUMS)
            q[p] = 1.0 / S[p]
    else:  # s_j by index, then the divisions along the buffer (module docstring)
        for p in range(n):
            q[p] = S[idx[p]]
        for p in range(n):
            q[p] = 1.0 / q[p]
    grows = 0
    total = 0.0
    for p in range(n):
        j = _at(idx, p)
        x = val[p]
        grows += abs(x) > S[j]
        v = x * q[p]
        total += v * v
    return -1.0 if grows > 0 else total


@njit(fastmath=_SUMS, **ROW_HELPER)
def _arow_variance(
    g0: np.ndarray,
    gk: np.ndarray,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    both: bool,
    scratch: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """``x^T Sigma x`` of the shared part, plus the per-task part's when ``both``, in one
    pass (the sums of ``reference._arow``). A sparse row's variances are first gathered
    into ``scratch`` (two rows of at least ``n``), then summed along it: a sum over entries
    read by index is vectorised or not depending on the arrays' strides (on AVX2 the C
    order's is and the order by feature's is not), and its reassociated order with it, so
    the two orders of a member would differ in the last bits (docs/algorithms.md
    Sec. 11.4); along the buffer every layout runs the same vector code."""
    if idx is None:
        return _variance_sums(val, g0, gk, n, both)
    s0 = scratch[0]
    sk = scratch[1]
    for p in range(n):  # stores only, no sums (see _SUMS)
        j = idx[p]
        s0[p] = g0[j]
        if both:
            sk[p] = gk[j]
    return _variance_sums(val, s0, sk, n, both)


@njit(fastmath=_SUMS, **ROW_HELPER)
def _variance_sums(
    val: np.ndarray, v0: np.ndarray, vk: np.ndarray, n: int, both: bool
) -> float:  # pragma: no cover - compiled
    """``sum_p val_p^2 v0_p`` (plus ``sum_p val_p^2 vk_p`` when ``both``) along the row."""
    a = 0.0
    b = 0.0
    if both:
        for p in range(n):
            x = val[p]
            a += x * x * v0[p]
            b += x * x * vk[p]
        return a + b
    for p in range(n):
        x = val[p]
        a += x * x * v0[p]
    return a


@njit(fastmath=_SUMS, error_model="numpy", **ROW_HELPER)
def _fused_rates(
    acc: np.ndarray,
    q: np.ndarray,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    gg: float,
    eta: float,
    rates: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """:func:`_adagrad_rates` in one pass (``G_j += g^2 x_j^2``, ``rates_p = eta (q_p /
    sqrt(G_j))``, the sum of ``x_j^2 rates_p``): with numpy's error model the division
    has no zero check and the loop vectorises, square root included."""
    if idx is None:
        for p in range(n):  # stores only, no sums (see _SUMS)
            x = val[p]
            total = acc[p] + gg * (x * x)
            acc[p] = total
            rates[p] = eta * (q[p] / math.sqrt(total))
    else:  # the accumulators by index, then the rates along the buffer (module docstring)
        for p in range(n):
            j = idx[p]
            x = val[p]
            total = acc[j] + gg * (x * x)
            acc[j] = total
            rates[p] = total
        for p in range(n):
            rates[p] = eta * (q[p] / math.sqrt(rates[p]))
    h = 0.0
    for p in range(n):
        x = val[p]
        h += x * x * rates[p]
    return h


@njit(fastmath=_SUMS, error_model="numpy", **ROW_HELPER)
def _fused_rates2(
    acc0: np.ndarray,
    acck: np.ndarray,
    q: np.ndarray,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    gg: float,
    eta: float,
    rates: np.ndarray,
) -> tuple[float, float]:
    """:func:`_fused_rates` of the shared and the per-task part in one pass, with one
    division for both: ``rate_0 = (eta q_p sqrt(G_k)) c``, ``rate_k = (eta q_p sqrt(G_0))
    c`` with ``c = 1 / (sqrt(G_0) sqrt(G_k))`` (equal to ``eta q_p / sqrt(G)`` up to
    rounding; in this order no product leaves the range of doubles before the rates
    do). ``rates[0]`` and ``rates[1]`` receive them; returns both parts' sums of
    ``x_j^2 rate_j`` (docs/algorithms.md Sec. 11.2, steps 3-4)."""
    r0 = rates[0]
    rk = rates[1]
    if idx is None:
        for p in range(n):  # stores only, no sums (see _SUMS)
            x = val[p]
            t0, tk = _accumulate2(acc0, acck, p, gg * (x * x))
            r0[p], rk[p] = _both_rates(t0, tk, eta * q[p])
    else:  # the accumulators by index, then the rates along the buffers (module docstring)
        for p in range(n):
            x = val[p]
            r0[p], rk[p] = _accumulate2(acc0, acck, idx[p], gg * (x * x))
        for p in range(n):
            r0[p], rk[p] = _both_rates(r0[p], rk[p], eta * q[p])
    h0 = 0.0
    hk = 0.0
    for p in range(n):
        x = val[p]
        x2 = x * x
        h0 += x2 * r0[p]
        hk += x2 * rk[p]
    if not (_usable(h0) and _usable(hk)):
        h0 = _exact_rates(acc0, q, idx, val, n, eta, r0)
        hk = _exact_rates(acck, q, idx, val, n, eta, rk)
    return h0, hk


@njit(cache=True, inline="always")
def _accumulate2(
    acc0: np.ndarray, acck: np.ndarray, j: int, step: float
) -> tuple[float, float]:  # pragma: no cover - compiled
    """Both parts' accumulators of feature j plus ``step`` (``g^2 x_j^2``); returns them."""
    t0 = acc0[j] + step
    tk = acck[j] + step
    acc0[j] = t0
    acck[j] = tk
    return t0, tk


@njit(cache=True, inline="always")
def _both_rates(t0: float, tk: float, e: float) -> tuple[float, float]:  # pragma: no cover
    """``(e / sqrt(t0), e / sqrt(tk))`` with one division: ``(e sqrt(tk)) c`` and
    ``(e sqrt(t0)) c``, ``c = 1 / (sqrt(t0) sqrt(tk))`` (:func:`_fused_rates2`)."""
    s0 = math.sqrt(t0)
    sk = math.sqrt(tk)
    c = 1.0 / (s0 * sk)
    return (e * sk) * c, (e * s0) * c


@njit(cache=True, inline="always")
def _usable(h: float) -> bool:  # pragma: no cover - compiled
    """Whether a sum ``h`` of ``x_j^2 rate_j`` is positive and finite. A step is taken only
    then: 0 means no move, and an infinite ``h`` a rate that overflowed (docs/algorithms.md
    Sec. 11.2). :func:`_fused_rates2` also checks its sums of one division for both parts
    with it: they are not usable when some ``sqrt(G_0j) sqrt(G_kj)`` underflows or
    overflows, where that division is not the rates'."""
    return 0.0 < h < math.inf


@njit(fastmath=_SUMS, error_model="numpy", **ROW_HELPER)
def _exact_rates(
    acc: np.ndarray,
    q: np.ndarray,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    eta: float,
    rates: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """``rates_p = eta (q_p / sqrt(G_j))`` of the updated accumulators of one part and the
    sum of ``x_j^2 rates_p``, one division per part (:func:`_fused_rates` without the
    accumulator update)."""
    for p in range(n):  # stores only, no sums (see _SUMS)
        rates[p] = eta * (q[p] / math.sqrt(acc[_at(idx, p)]))
    h = 0.0
    for p in range(n):
        x = val[p]
        h += x * x * rates[p]
    return h


@njit(error_model="numpy", **ROW_HELPER)
def _axpy2(
    u0: np.ndarray,
    a0: float,
    uk: np.ndarray,
    ak: float,
    rates: np.ndarray,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
) -> None:  # pragma: no cover - compiled
    """:func:`_axpy` of both parts in one pass: ``u0_j += (a0 rates[0, p]) x_j``,
    ``uk_j += (ak rates[1, p]) x_j``."""
    r0 = rates[0]
    rk = rates[1]
    for p in range(n):
        j = _at(idx, p)
        x = val[p]
        u0[j] += (a0 * r0[p]) * x
        uk[j] += (ak * rk[p]) * x


@njit(fastmath=_SUMS, error_model="numpy", **ROW_HELPER)
def _dense_scan(
    src: np.ndarray,
    bias: bool,
    u0: np.ndarray,
    uk: np.ndarray,
    S: np.ndarray,
    val: np.ndarray,
    q: np.ndarray,
) -> tuple[float, float, int]:
    """One pass over a dense row: copy it to ``val`` (the constant 1 appended after it
    with ``bias``), both scores :func:`_dot2`, ``q_p = 1 / s_p`` and the row's
    ``sum_p (x_p q_p)^2`` (:func:`_inverse`). Returns ``(score, norm, flags)``:
    ``flags`` counts the zero entries and the ``|x_p| > s_p``; when it is not 0 only
    the copy and the score hold (the caller takes the general path)."""
    n = src.shape[0]
    for p in range(n):  # stores only, no sums (see _SUMS)
        val[p] = src[p]
        q[p] = 1.0 / S[p]
    s0 = 0.0
    sk = 0.0
    norm = 0.0
    flags = 0
    for p in range(n):
        x = val[p]
        s0 += x * u0[p]
        sk += x * uk[p]
        flags += (x == 0.0) + (abs(x) > S[p])
        v = x * q[p]
        norm += v * v
    if bias:
        s = float(S[n])
        val[n] = 1.0
        s0 += float(u0[n])
        sk += float(uk[n])
        flags += int(s < 1.0)
        r = 1.0 / s
        q[n] = r
        norm += r * r
    return s0 + sk, norm, flags


@njit(**ROW_HELPER)
def _member_row(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    k: int,
    y: float,
    configs: ConfigArrays,
    state: StateArrays,
    outlier: OutlierArrays,
    buffers: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """:func:`_learn_row` for one configuration without an outlier part, in fewer passes
    over the row: both scores in one loop, the normaliser's inverse without a branch when
    it does not move, each part's accumulator, rate and share of h in one loop."""
    losses, etas, couplings, ridges = configs
    U0, U, G0, G, S, stats, mistakes, _ = state
    u0, uk, g0, gk = U0[0], U[0, k], G0[0], G[0, k]
    if idx is None:
        score = _dot2(u0, uk, idx, val, n)
    else:
        score = _dot_touch(u0, uk, g0, gk, idx, val, n, buffers[0])
    if (score >= 0.0) != (y > 0.0):
        mistakes[0] += 1
    if n == 0:
        return score
    q = buffers[0]
    norm = _inverse(S, idx, val, q, n)
    if norm < 0.0:
        _normalise(S, q, idx, val, n, U0, U, losses, outlier)
        norm = _scaled_sqnorm(val, q, n)
    stats[0] += norm
    stats[1] += 1.0
    scale = math.sqrt(stats[1] / stats[0])
    z0 = y * score
    if losses[0] == AROW:
        _arow_fused(u0, g0, uk, gk, idx, val, n, y, z0, couplings[0], ridges[0], buffers[1:3])
    else:
        _first_order_step(
            losses[0], etas[0], u0, g0, uk, gk, q, idx, val, n, y, z0, couplings[0], scale, buffers
        )
    return score


@njit(cache=True, inline="always")
def learn_row(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    k: int,
    y: float,
    configs: ConfigArrays,
    state: StateArrays,
    outlier: OutlierArrays,
    member: bool,
    scores: np.ndarray,
    buffers: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """One labelled event ``(x, y, k)`` for every configuration, on a loaded row in the
    canonical form of the reference (``idx`` None for a dense row without zeros, else the
    non-zero entries with their feature indices, :func:`_nonzeros`): the scores, the
    mistake counts, the normaliser, ``stats`` and every configuration's step of
    ``reference.learn``, in its order. ``member``: one configuration without an outlier part
    (:func:`_member_row`), else :func:`_learn_row`. Returns the leader's score. The row
    (``idx``, ``val``) is left as it was, so a caller may learn it again for another task."""
    if member:
        return _member_row(idx, val, n, k, y, configs, state, outlier, buffers)
    return _learn_row(idx, val, n, k, y, configs, state, outlier, scores, buffers)


@njit(**ROW_HELPER)
def _dense_member_row(
    x: np.ndarray,
    bias: bool,
    k: int,
    y: float,
    loss: int,
    eta: float,
    b: float,
    r: float,
    state: StateArrays,
    val: np.ndarray,
    buffers: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """:func:`_member_row` of the dense row ``x`` (then the constant 1 with ``bias``) read
    straight from the batch: its copy, both scores, the normaliser's inverse and the
    row's norm in one pass (:func:`_dense_scan`). Returns NaN, having changed no state,
    for a row with a zero entry or a growing normaliser: the caller then takes the
    general path (:func:`_member_row`), which this function does not call, so that its
    per-row cost stays that of the dense loops."""
    U0, U, G0, G, S, stats, mistakes, _ = state
    u0, uk, g0, gk = U0[0], U[0, k], G0[0], G[0, k]
    q = buffers[0]
    n = x.shape[0] + (1 if bias else 0)
    score, norm, flags = _dense_scan(x, bias, u0, uk, S, val, q)
    if flags > 0 or n == 0:
        return math.nan
    if (score >= 0.0) != (y > 0.0):
        mistakes[0] += 1
    stats[0] += norm
    stats[1] += 1.0
    scale = math.sqrt(stats[1] / stats[0])
    z0 = y * score
    if loss == AROW:
        _arow_fused(u0, g0, uk, gk, None, val, n, y, z0, b, r, buffers[1:3])
    else:
        _first_order_step(loss, eta, u0, g0, uk, gk, q, None, val, n, y, z0, b, scale, buffers)
    return score


@njit(**ROW_HELPER)
def _arow_fused(
    u0: np.ndarray,
    g0: np.ndarray,
    uk: np.ndarray,
    gk: np.ndarray,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    y: float,
    z0: float,
    b: float,
    r: float,
    scratch: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Diagonal AROW on the shared + per-task parts (reference: ``reference._arow``), both
    parts' ``x^T Sigma x`` in one pass (``scratch``: :func:`_arow_variance`), then both
    parts' updates in another."""
    if z0 >= 1.0:
        return
    ay = (1.0 - z0) / (_arow_variance(g0, gk, idx, val, n, b > 0.0, scratch) + r) * y
    if b > 0.0:
        _arow_parts(u0, g0, uk, gk, ay, r, idx, val, n)
    else:
        _arow_part(u0, g0, ay, r, idx, val, n)


@njit(error_model="numpy", **ROW_HELPER)
def _arow_parts(
    u0: np.ndarray,
    g0: np.ndarray,
    uk: np.ndarray,
    gk: np.ndarray,
    ay: float,
    r: float,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
) -> None:  # pragma: no cover - compiled
    """:func:`_arow_part` of both parts in one pass, each new variance with one division:
    ``1 / (1 / Sigma_j + x_j^2 / r) = Sigma_j r / (r + x_j^2 Sigma_j)`` (equal up to
    rounding)."""
    for p in range(n):
        j = _at(idx, p)
        x = val[p]
        x2 = x * x
        s0 = g0[j]
        sk = gk[j]
        u0[j] += ay * s0 * x
        uk[j] += ay * sk * x
        g0[j] = (s0 * r) / (r + x2 * s0)
        gk[j] = (sk * r) / (r + x2 * sk)


@njit(**ROW_HELPER)
def _first_order_step(
    loss: int,
    eta: float,
    u0: np.ndarray,
    g0: np.ndarray,
    uk: np.ndarray,
    gk: np.ndarray,
    q: np.ndarray,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    y: float,
    z0: float,
    b: float,
    scale: float,
    buffers: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """:func:`_gradient_step` without an outlier part, each part's accumulator, rate and
    share of h in one pass (:func:`_fused_rates`)."""
    g, ez0 = slope_terms_compiled(loss, z0)
    if g == 0.0:
        return
    gg = g * g
    rates = buffers[1:3]
    if b > 0.0:
        h0, hk = _fused_rates2(g0, gk, q, idx, val, n, gg, eta, rates)
        h = (h0 + b * hk) * scale
    else:
        h = _fused_rates(g0, q, idx, val, n, gg, eta, rates[0]) * scale
    if not _usable(h):  # an infinite h: a rate overflowed (docs/algorithms.md Sec. 11.2)
        return
    a = y * invariant_step_compiled(loss, z0, ez0, h) / h * scale
    if b > 0.0:
        _axpy2(u0, a, uk, a * b, rates, idx, val, n)
    else:
        _axpy(u0, a, rates[0], idx, val, n)


@njit(**ROW_HELPER)
def _by_feature(U0: np.ndarray) -> bool:  # pragma: no cover - compiled
    """Whether the state is laid out by feature (:mod:`learners.adaptive.layout`): the
    configurations of ``U0`` one float apart."""
    return U0.strides[0] == U0.itemsize


@njit(**ROW_HELPER)
def full_csr_row(call: KernelPass, i: int, dim: int) -> bool:  # pragma: no cover - compiled
    """Whether row i of a CSR call stores every feature (``dim`` entries with the bias).
    The call's CSR rows are canonical (sorted, unique, in range), so such a row holds
    feature p at position p: the row a dense call would hand over."""
    width = dim - (1 if call.bias else 0)
    return not call.dense and call.indptr[i + 1] - call.indptr[i] == width


@njit(**ROW_HELPER)
def dense_row(call: KernelPass, i: int, U0: np.ndarray) -> bool:  # pragma: no cover
    """Whether row i of the call, when none of its entries is zero, is read in the dense
    form (no feature indices): the rows of a dense call, and the rows
    of a CSR call that store every feature (:func:`full_csr_row`), as
    :func:`learners.inputs.as_vector` makes a full sparse row dense. So a row gives the
    same numbers whichever form it comes in, alone or in a batch. Never on a state laid
    out by feature (:func:`_by_feature`, read off the shared weights ``U0``): there the
    dense loops run strided, and their sums would not add in the order of the same row's
    sparse form, so every row takes the sparse form (its non-zeros and their indices).
    It takes ``U0``, not the state: every field of every array passed is an argument of
    a call, once per row."""
    if _by_feature(U0):
        return False
    return call.dense or full_csr_row(call, i, U0.shape[1])


@njit(**ROW_HELPER)
def row_width(call: KernelPass, dim: int) -> int:  # pragma: no cover - compiled
    """The longest loaded row of ``call`` (the size of the row buffers)."""
    if call.dense:
        return dim
    width = 0
    for i in range(call.y.shape[0]):
        width = max(width, call.indptr[i + 1] - call.indptr[i])
    return width + (1 if call.bias else 0)


@njit(cache=True)
def adaptive_pass(
    call: KernelPass, configs: ConfigArrays, state: StateArrays, outlier: OutlierArrays
) -> None:  # pragma: no cover - compiled
    """Test-then-train over ``call``'s rows (module docstring); fills ``call.scores``.

    ``configs``, ``state`` and ``outlier`` are the arrays of :data:`ConfigArrays`,
    :data:`StateArrays` and :data:`OutlierArrays`, updated in place. One configuration
    without an outlier part runs :func:`_member_row`, anything else :func:`_learn_row`.
    The row buffers (:func:`_row_buffers`) are handed to :func:`_pass_rows`, the loop
    over the rows.
    """
    _pass_rows(call, configs, state, outlier, _row_buffers(call, state))


@njit(cache=True, inline="always")
def _row_buffers(call: KernelPass, state: StateArrays) -> RowBuffers:  # pragma: no cover
    """``(idx, val, buffers, scores)`` of a pass: the row buffers as long as the longest row
    of the call, not D, and one score per configuration. Inlined into the two entry
    points: a compiled call returning them made a member's pass 25% slower."""
    _, dim = state[0].shape
    width = max(row_width(call, dim), 1)
    return (
        np.empty(width, dtype=np.int64),
        np.empty(width),
        np.empty((3, width)),
        np.empty(score_slots(state, width)),
    )


@njit(**ROW_HELPER)
def _pass_rows(
    call: KernelPass,
    configs: ConfigArrays,
    state: StateArrays,
    outlier: OutlierArrays,
    row_buffers: RowBuffers,
) -> None:  # pragma: no cover - compiled
    """The row loop of :func:`adaptive_pass` on its buffers. Compiled without reference
    counting, as every per-row helper here (:data:`learners.kernels.ROW_HELPER`): with
    it, each row's views and calls counted references to the arrays they touch, two
    atomic operations per array and call (docs/algorithms.md Sec. 11.5). A CSR call's
    rows prefetch the state of the next row (:func:`_prefetch_row`). One loop for both
    kinds of call, the kind tested per row: compiled once, where a loop specialised to
    each kind compiled the whole row step twice for a branch the processor predicts."""
    idx, val, buffers, scores = row_buffers
    M, dim = state[0].shape
    member = M == 1 and outlier[0][0] == 0.0
    fast = member and not call.normalize and not _by_feature(state[0])
    losses, etas, couplings, ridges = configs
    loss, eta, b, r = losses[0], etas[0], couplings[0], ridges[0]
    rows = call.y.shape[0]
    for i in range(rows):
        k, y = call.tasks[i], call.y[i]
        if not call.dense and i + 1 < rows:
            _prefetch_row(call, i + 1, state)
        if fast:
            score = math.nan
            if call.dense:
                prefetch_row_ahead(call.X, i)
                x = call.X[i]
                score = _dense_member_row(x, call.bias, k, y, loss, eta, b, r, state, val, buffers)
            elif full_csr_row(call, i, dim):  # the same row as a dense call's (dense_row)
                x64 = call.data[call.indptr[i] : call.indptr[i + 1]]
                score = _dense_member_row(
                    x64, call.bias, k, y, loss, eta, b, r, state, val, buffers
                )
            if not math.isnan(score):
                call.scores[i] = score
                continue
        n = load_row(call, i, dim, idx, val)
        if dense_row(call, i, state[0]) and _all_nonzero(val, n):
            if member:
                call.scores[i] = _member_row(None, val, n, k, y, configs, state, outlier, buffers)
            else:
                call.scores[i] = _learn_row(
                    None, val, n, k, y, configs, state, outlier, scores, buffers
                )
        else:
            n = _nonzeros(call.dense, idx, val, n)
            if member:
                call.scores[i] = _member_row(idx, val, n, k, y, configs, state, outlier, buffers)
            else:
                call.scores[i] = _learn_row(
                    idx, val, n, k, y, configs, state, outlier, scores, buffers
                )


@njit(**ROW_HELPER)
def _prefetch_row(call: KernelPass, i: int, state: StateArrays) -> None:  # pragma: no cover
    """Prefetch the state that CSR row ``i`` of the call will touch (every configuration's
    shared and task-part weights and accumulators of its features, and their normaliser):
    called a row ahead, on a state larger than the caches (:func:`learners.kernels.prefetch`)."""
    U0, U, G0, G, S = state[0], state[1], state[2], state[3], state[4]
    k = call.tasks[i]
    for p in range(call.indptr[i], call.indptr[i + 1]):
        j = call.indices[p]
        prefetch(S, j)  # type: ignore[call-arg]  # numba supplies typingctx
        if _by_feature(U0):  # every configuration of feature j side by side
            for m in (0, U0.shape[0] - 1):
                prefetch(U0[m], j)
                prefetch(G0[m], j)
                prefetch(U[m, k], j)
                prefetch(G[m, k], j)
            continue
        for m in range(U0.shape[0]):
            prefetch(U0[m], j)
            prefetch(G0[m], j)
            prefetch(U[m, k], j)
            prefetch(G[m, k], j)


@njit(**ROW_HELPER)
def _row_score(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    k: int,
    state: StateArrays,
    outlier: OutlierArrays,
    member: bool,
    scores: np.ndarray,
    buffers: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """The leader's score of a loaded row, summed exactly as :func:`_member_row`
    (``member``) or :func:`_learn_row` sum it before they learn. The loops are repeated
    here rather than shared: with a shared scoring helper the grid's pass ran 7-17%
    slower (``adaptive`` 0.24 -> 0.20-0.23 M events/s at K = 10, d = 100); the
    conformance checks hold the two to the bit (``check_score_and_learn_one``)."""
    U0, U, G0, G, _, _, mistakes, _ = state
    _, Q, Qs, _ = outlier
    if member:
        if idx is None:
            return _dot2(U0[0], U[0, k], idx, val, n)
        return _dot_touch(U0[0], U[0, k], G0[0], G[0, k], idx, val, n, buffers[0])
    # each configuration's score is a sum of its own: the leader's alone is computed (in
    # lanes, its group of eight), with the same bits as in the learning pass
    lead = leader(mistakes)
    if idx is not None:  # noqa: SIM102 - numba drops the branch when idx is None only so
        if _in_lanes(state, outlier):
            group = lead - lead % LANES
            grid_scores(idx, val, n, k, U0, U, scores, group, min(group + LANES, U0.shape[0]))
            return scores[lead]
    if idx is None:
        score = _dot(U0[lead], idx, val, n) + _dot(U[lead, k], idx, val, n)
    else:
        score = _dot_touch(U0[lead], U[lead, k], G0[lead], G[lead, k], idx, val, n, buffers[0])
    if Q.shape[1] > 0:
        score += Qs[lead, k] * _dot(Q[lead, k], idx, val, n)
    return score


@njit(cache=True)
def adaptive_scores(
    call: KernelPass, state: StateArrays, outlier: OutlierArrays
) -> None:  # pragma: no cover - compiled
    """The leader's score of each of ``call``'s rows into ``call.scores``, without
    learning: each row is read and summed exactly as :func:`adaptive_pass` reads and sums
    it before learning it, so the score equals the one that pass returns for the same
    state, bit for bit (``decision_one`` and ``score_and_learn_one`` agree). Nothing of
    ``state`` changes. Buffers as in :func:`adaptive_pass`; the loop is
    :func:`_score_rows`."""
    _score_rows(call, state, outlier, _row_buffers(call, state))


@njit(**ROW_HELPER)
def _score_rows(
    call: KernelPass,
    state: StateArrays,
    outlier: OutlierArrays,
    row_buffers: RowBuffers,
) -> None:  # pragma: no cover - compiled
    """The row loop of :func:`adaptive_scores` on its buffers (no reference counting, as
    :func:`_pass_rows`)."""
    idx, val, buffers, scores = row_buffers
    M, dim = state[0].shape
    member = M == 1 and outlier[0][0] == 0.0
    fast = member and not call.normalize and not _by_feature(state[0])
    U0, U, S = state[0], state[1], state[4]
    for i in range(call.y.shape[0]):
        k = call.tasks[i]
        if fast and (call.dense or full_csr_row(call, i, dim)):
            if call.dense:
                x = call.X[i]
                score, _, flags = _dense_scan(x, call.bias, U0[0], U[0, k], S, val, buffers[0])
            else:  # the same row as a dense call's (dense_row)
                x64 = call.data[call.indptr[i] : call.indptr[i + 1]]
                score, _, flags = _dense_scan(x64, call.bias, U0[0], U[0, k], S, val, buffers[0])
            if flags == 0 and dim > 0:
                call.scores[i] = score
                continue
        n = load_row(call, i, dim, idx, val)
        if dense_row(call, i, state[0]) and _all_nonzero(val, n):
            call.scores[i] = _row_score(None, val, n, k, state, outlier, member, scores, buffers)
        else:
            n = _nonzeros(call.dense, idx, val, n)
            call.scores[i] = _row_score(idx, val, n, k, state, outlier, member, scores, buffers)


#: The configurations the warm-ups compile for: (losses, outlier gammas, by feature): a
#: member, a member with an outlier part, a grid of three, and a grid in the order by
#: feature (:mod:`learners.adaptive.layout`; a member in that order runs the same
#: compiled code).
WARM_BASES = (
    ([0], [0.0], False),
    ([0], [0.5], False),
    ([0, 1, 2], [0.5, 0.0, 0.0], False),
    ([0, 1, 2], [0.0, 0.0, 0.0], True),
)


def warm_state(M: int, n_tasks: int, dim: int, interleave: bool) -> StateArrays:
    """A fresh state of M configurations (AdaGrad sums of 1) in the given memory order."""
    zeros, ones = np.zeros(M), np.ones(M)
    u0, g0 = config_pair((M, dim), zeros, ones, interleave)
    u, g = config_pair((M, n_tasks, dim), zeros, ones, interleave)
    return (
        u0,
        u,
        g0,
        g,
        np.zeros(dim),
        np.zeros(2),
        np.zeros(M, dtype=np.int64),
        np.zeros((M, 2), dtype=np.int64),
    )


@register_warmup
def warm() -> None:
    """Compile :func:`adaptive_pass` and :func:`adaptive_scores` for dense and CSR rows
    (dimension 3 + bias) on tiny inputs, for each of :data:`WARM_BASES`."""
    for rows in warm_rows():
        for losses, gammas, interleave in WARM_BASES:
            M = len(losses)
            call = warm_call(rows, 1)._replace(active=False)
            state = warm_state(M, 2, 4, interleave)
            outlier = (np.array(gammas), np.zeros((M, 2, 4)), np.ones((M, 2)), np.zeros((M, 2)))
            adaptive_scores(call, state, outlier)
            configs = (np.array(losses, dtype=np.int64), np.ones(M), np.ones(M), np.ones(M))
            adaptive_pass(call, configs, state, outlier)
