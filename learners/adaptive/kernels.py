"""The compiled batch pass of the adaptive learners (docs/algorithms.md Sec. 11).

:func:`adaptive_pass` runs every configuration over a batch in one sequential
pass, row by row in exactly the order of the numpy reference
(:func:`learners.adaptive.reference.learn`): per row ``(x, y, k)`` it scores x
with every configuration, reports the leader's score (the configuration with
the fewest progressive mistakes so far, the first on ties), then updates the
normaliser and every configuration. The cost is O(M nnz(x)) per row whatever
K and D (the rows are read through :func:`learners.active.kernels.load_row`,
dense or CSR). :func:`warm` compiles it on tiny inputs (``cache=True`` keeps
the machine code on disk). numba checks a cached kernel against its own source
file only: after a change of :mod:`learners.adaptive.steps` or of the row
helpers of :mod:`learners.active.kernels`, delete this package's
``__pycache__/*.nbi`` / ``*.nbc`` files.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.active.kernels import KernelPass, load_row, warm_call, warm_rows
from learners.adaptive.reference import FOLD_BELOW
from learners.adaptive.steps import AROW, invariant_step_compiled, loss_slope_compiled
from learners.kernels import register_warmup

#: The outlier parts ``(gammas, Q, Qs, Qn)`` (docs/algorithms.md Sec. 11.7): zhang2018's
#: group-lasso weight per configuration and ``q_k = Qs[m, k] Q[m, k]`` with ``Qn = ||q_k||^2``;
#: ``Q`` has shape (M, 0, 0) for a learner without outlier parts.
OutlierArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: Sums may be reassociated (and so run in SIMD lanes), as in the other kernels; a sum
#: then differs from the reference's in its last bits only.
_SUMS = {"reassoc"}

__all__ = ["ConfigArrays", "OutlierArrays", "StateArrays", "adaptive_pass", "leader", "warm"]


@njit(cache=True)
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


@njit(cache=True, fastmath=_SUMS)
def _dot(
    w: np.ndarray, idx: np.ndarray | None, val: np.ndarray, n: int
) -> float:  # pragma: no cover
    s = 0.0
    for p in range(n):
        s += val[p] * w[_at(idx, p)]
    return s


@njit(cache=True, fastmath=_SUMS)
def _weighted_sqnorm(val: np.ndarray, weights: np.ndarray, n: int) -> float:  # pragma: no cover
    """``sum_p val_p^2 weights_p`` over the first n entries."""
    s = 0.0
    for p in range(n):
        s += val[p] * val[p] * weights[p]
    return s


@njit(cache=True, fastmath=_SUMS)
def _scaled_sqnorm(val: np.ndarray, q: np.ndarray, n: int) -> float:  # pragma: no cover
    """``sum_p (val_p q_p)^2``: with ``q_p = 1 / s_j`` the row's ``sum_j (x_j / s_j)^2``."""
    s = 0.0
    for p in range(n):
        v = val[p] * q[p]
        s += v * v
    return s


@njit(cache=True)
def _axpy(
    w: np.ndarray, a: float, coef: np.ndarray, idx: np.ndarray | None, val: np.ndarray, n: int
) -> None:  # pragma: no cover - compiled
    """``w_j += (a coef_p) x_j`` for the row's coordinates."""
    for p in range(n):
        w[_at(idx, p)] += (a * coef[p]) * val[p]


@njit(cache=True)
def _gather(
    out: np.ndarray, w: np.ndarray, idx: np.ndarray | None, n: int
) -> None:  # pragma: no cover - compiled
    for p in range(n):
        out[p] = w[_at(idx, p)]


@njit(cache=True)
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


@njit(cache=True)
def _all_nonzero(val: np.ndarray, n: int) -> bool:  # pragma: no cover - compiled
    zeros = 0
    for p in range(n):
        zeros += val[p] == 0.0
    return zeros == 0


@njit(cache=True)
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
    for p in range(n):
        j = _at(idx, p)
        a = abs(val[p])
        if a > S[j]:
            if S[j] > 0.0:
                _rescale(U0, U, losses, j, S[j] / a, outlier)
            S[j] = a
        q[p] = 1.0 / S[j]


@njit(cache=True)
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


@njit(cache=True)
def _arow_part(
    u: np.ndarray,
    sigma: np.ndarray,
    ay: float,
    r: float,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
) -> None:  # pragma: no cover - compiled
    """``u_j += ay Sigma_j x_j``, ``Sigma_j <- 1 / (1 / Sigma_j + x_j^2 / r)``."""
    for p in range(n):
        j = _at(idx, p)
        x = val[p]
        u[j] += ay * sigma[j] * x
        sigma[j] = 1.0 / (1.0 / sigma[j] + x * x / r)


@njit(cache=True)
def _arow_step(
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
    buf: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Diagonal AROW on the shared + per-task parts (reference: ``reference._arow``)."""
    if z0 >= 1.0:
        return
    _gather(buf, g0, idx, n)
    v = _weighted_sqnorm(val, buf, n)
    if b > 0.0:
        _gather(buf, gk, idx, n)
        v += _weighted_sqnorm(val, buf, n)
    ay = (1.0 - z0) / (v + r) * y
    _arow_part(u0, g0, ay, r, idx, val, n)
    if b > 0.0:
        _arow_part(uk, gk, ay, r, idx, val, n)


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
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
    g = loss_slope_compiled(loss, z0)
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
    if not h > 0.0:
        return
    a = y * invariant_step_compiled(loss, z0, h) / h * scale
    _axpy(u0, a, rate0, idx, val, n)
    if b > 0.0:
        _axpy(uk, a * b, ratek, idx, val, n)
    if gamma > 0.0:
        _, Q, Qs, Qn = outlier
        _outlier_step(Q, Qs, Qn, m, k, a, ratek, idx, val, n, eta * gamma)


#: The configuration arrays ``(losses, etas, couplings, ridges)``, shape (M,) each.
ConfigArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: The learned state ``(U0, U, G0, G, S, stats, mistakes)`` (``reference.AdaptiveState``).
StateArrays = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]


@njit(cache=True)
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
    U0, U, G0, G, S, stats, mistakes = state
    gammas, Q, Qs, _ = outlier
    M = U0.shape[0]
    for m in range(M):
        scores[m] = _dot(U0[m], idx, val, n) + _dot(U[m, k], idx, val, n)
        if Q.shape[1] > 0:
            scores[m] += Qs[m, k] * _dot(Q[m, k], idx, val, n)
    out = scores[leader(mistakes)]
    for m in range(M):
        if (scores[m] >= 0.0) != (y > 0.0):
            mistakes[m] += 1
    if n == 0:
        return out
    q, rate0, ratek = buffers[0], buffers[1], buffers[2]
    _normalise(S, q, idx, val, n, U0, U, losses, outlier)
    stats[0] += _scaled_sqnorm(val, q, n)
    stats[1] += 1.0
    scale = math.sqrt(stats[1] / stats[0])
    for m in range(M):
        z0 = y * scores[m]
        if losses[m] == AROW:
            _arow_step(
                U0[m], G0[m], U[m, k], G[m, k], idx, val, n, y, z0, couplings[m], ridges[m], rate0
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


@njit(cache=True)
def _select_row(
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
    work: np.ndarray,
) -> float:  # pragma: no cover - compiled
    """:func:`_learn_row` on the feature-major arrays ``U0``, ``G0`` (D, M) and ``U``, ``G``
    (K, D, M) of ``M > 1`` configurations: the scores and the rescaling loop over the M
    configurations side by side (entries of feature j contiguous); each configuration
    then steps through its column (stride M), whose cache lines the configurations
    before it have just brought in. ``work`` is (3, M): two sums and, in row 2, 1 for
    the first-order configurations (set by the caller)."""
    losses, etas, couplings, ridges = configs
    U0, U, G0, G, S, stats, mistakes = state
    gammas, Q, Qs, Qn = outlier
    M = U0.shape[1]
    # (2-d and 3-d indexing: a view per coordinate would cost reference counts)
    for m in range(M):
        work[0, m] = 0.0
        work[1, m] = 0.0
    for p in range(n):
        j = _at(idx, p)
        x = val[p]
        for m in range(M):
            work[0, m] += x * U0[j, m]
            work[1, m] += x * U[k, j, m]
    for m in range(M):
        scores[m] = work[0, m] + work[1, m]
        if Q.shape[1] > 0:
            scores[m] += Qs[m, k] * _dot(Q[m, k], idx, val, n)
    out = scores[leader(mistakes)]
    for m in range(M):
        if (scores[m] >= 0.0) != (y > 0.0):
            mistakes[m] += 1
    if n == 0:
        return out
    q, rate0, ratek = buffers[0], buffers[1], buffers[2]
    # the normaliser, and the rescaling of the first-order configurations' weights
    for p in range(n):
        j = _at(idx, p)
        a = abs(val[p])
        if a > S[j]:
            if S[j] > 0.0:
                ratio = S[j] / a
                for m in range(M):
                    U0[j, m] *= ratio if work[2, m] > 0.0 else 1.0
                for kk in range(U.shape[0]):
                    for m in range(M):
                        U[kk, j, m] *= ratio if work[2, m] > 0.0 else 1.0
                for m in range(M):
                    if work[2, m] > 0.0:
                        for kk in range(Q.shape[1]):
                            qv = Qs[m, kk] * Q[m, kk, j]
                            Qn[m, kk] += qv * qv * (ratio * ratio - 1.0)
                            Q[m, kk, j] *= ratio
            S[j] = a
        q[p] = 1.0 / S[j]
    stats[0] += _scaled_sqnorm(val, q, n)
    stats[1] += 1.0
    scale = math.sqrt(stats[1] / stats[0])
    for m in range(M):
        z0 = y * scores[m]
        if losses[m] == AROW:
            _arow_step(
                U0[:, m],
                G0[:, m],
                U[k, :, m],
                G[k, :, m],
                idx,
                val,
                n,
                y,
                z0,
                couplings[m],
                ridges[m],
                rate0,
            )
        else:
            _gradient_step(
                losses[m],
                etas[m],
                U0[:, m],
                G0[:, m],
                U[k, :, m],
                G[k, :, m],
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


@njit(cache=True)
def _row_width(call: KernelPass, dim: int) -> int:  # pragma: no cover - compiled
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
    :data:`StateArrays` and :data:`OutlierArrays`, updated in place; the weights and
    accumulators are feature-major, ``U0``, ``G0`` (D, M) and ``U``, ``G`` (K, D, M).
    With ``M = 1`` that is the memory of the (M, D) and (M, K, D) arrays the per-
    configuration steps read; ``M > 1`` runs :func:`_select_row`.
    The row buffers are as long as the longest row of the call, not D.
    """
    U0, U, G0, G, S, stats, mistakes = state
    dim, M = U0.shape
    K = U.shape[0]
    dense = call.dense
    width = max(_row_width(call, dim), 1)
    idx = np.empty(width, dtype=np.int64)
    val = np.empty(width)
    scores = np.empty(M)
    buffers = np.empty((3, width))
    if M == 1:
        member = (
            U0.reshape((1, dim)),
            U.reshape((1, K, dim)),
            G0.reshape((1, dim)),
            G.reshape((1, K, dim)),
            S,
            stats,
            mistakes,
        )
        for i in range(call.y.shape[0]):
            n = load_row(call, i, dim, idx, val)
            k, y = call.tasks[i], call.y[i]
            if dense and _all_nonzero(val, n):
                call.scores[i] = _learn_row(
                    None, val, n, k, y, configs, member, outlier, scores, buffers
                )
            else:
                n = _nonzeros(dense, idx, val, n)
                call.scores[i] = _learn_row(
                    idx, val, n, k, y, configs, member, outlier, scores, buffers
                )
        return
    work = np.zeros((3, M))
    for m in range(M):
        work[2, m] = 0.0 if configs[0][m] == AROW else 1.0
    for i in range(call.y.shape[0]):
        n = load_row(call, i, dim, idx, val)
        k, y = call.tasks[i], call.y[i]
        if dense and _all_nonzero(val, n):
            call.scores[i] = _select_row(
                None, val, n, k, y, configs, state, outlier, scores, buffers, work
            )
        else:
            n = _nonzeros(dense, idx, val, n)
            call.scores[i] = _select_row(
                idx, val, n, k, y, configs, state, outlier, scores, buffers, work
            )


@register_warmup
def warm() -> None:
    """Compile :func:`adaptive_pass` for dense and CSR rows (dimension 3 + bias) on tiny
    inputs: one configuration with an outlier part (a member) and a grid of three."""
    for rows in warm_rows():
        for losses, gammas in (([0], [0.5]), ([0, 1, 2], [0.0, 0.0, 0.0])):
            M = len(losses)
            K, D = (2, 4) if gammas[0] > 0.0 else (0, 0)
            call = warm_call(rows, 1)._replace(active=False)
            adaptive_pass(
                call,
                (np.array(losses, dtype=np.int64), np.ones(M), np.ones(M), np.ones(M)),
                (
                    np.zeros((4, M)),
                    np.zeros((2, 4, M)),
                    np.ones((4, M)),
                    np.ones((2, 4, M)),
                    np.zeros(4),
                    np.zeros(2),
                    np.zeros(M, dtype=np.int64),
                ),
                (np.array(gammas), np.zeros((M, K, D)), np.ones((M, K)), np.zeros((M, K))),
            )
