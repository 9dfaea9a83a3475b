"""The compiled batch pass of the adaptive learners (algorithms.md Sec. 11).

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
from learners.adaptive.steps import AROW, invariant_step_compiled, loss_slope_compiled

__all__ = ["adaptive_pass", "leader", "warm"]


@njit(cache=True)
def leader(mistakes: np.ndarray) -> int:  # pragma: no cover - compiled
    """The configuration with the fewest mistakes (the first on ties)."""
    best = 0
    for m in range(1, mistakes.shape[0]):
        if mistakes[m] < mistakes[best]:
            best = m
    return best


@njit(cache=True, fastmath={"reassoc"})
def _dot(w: np.ndarray, idx: np.ndarray, val: np.ndarray, n: int) -> float:  # pragma: no cover
    s = 0.0
    for p in range(n):
        s += val[p] * w[idx[p]]
    return s


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
def _arow_step(
    u0: np.ndarray,
    g0: np.ndarray,
    uk: np.ndarray,
    gk: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
    y: float,
    z0: float,
    b: float,
    r: float,
) -> None:  # pragma: no cover - compiled
    """Diagonal AROW on the shared + per-task parts (reference: ``reference._arow``)."""
    if z0 >= 1.0:
        return
    v = 0.0
    for p in range(n):
        v += val[p] * val[p] * g0[idx[p]]
    if b > 0.0:
        vk = 0.0
        for p in range(n):
            vk += val[p] * val[p] * gk[idx[p]]
        v += vk
    beta = 1.0 / (v + r)
    ay = (1.0 - z0) * beta * y
    for p in range(n):
        j = idx[p]
        x = val[p]
        u0[j] += ay * g0[j] * x
        g0[j] = 1.0 / (1.0 / g0[j] + x * x / r)
    if b > 0.0:
        for p in range(n):
            j = idx[p]
            x = val[p]
            uk[j] += ay * gk[j] * x
            gk[j] = 1.0 / (1.0 / gk[j] + x * x / r)


@njit(cache=True)
def _gradient_step(
    loss: int,
    eta: float,
    u0: np.ndarray,
    g0: np.ndarray,
    uk: np.ndarray,
    gk: np.ndarray,
    S: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
    y: float,
    z0: float,
    b: float,
    scale: float,
    rate0: np.ndarray,
    ratek: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Adaptive, normalised, invariant step (reference: ``reference.learn``)."""
    g = loss_slope_compiled(loss, z0)
    if g == 0.0:
        return
    gg = g * g
    h = 0.0
    for p in range(n):
        j = idx[p]
        x2 = val[p] * val[p]
        acc = g0[j] + gg * x2
        g0[j] = acc
        rate0[p] = eta / (S[j] * math.sqrt(acc))
        h += x2 * rate0[p]
    if b > 0.0:
        hk = 0.0
        etak = eta * b
        for p in range(n):
            j = idx[p]
            x2 = val[p] * val[p]
            acc = gk[j] + gg * x2
            gk[j] = acc
            ratek[p] = etak / (S[j] * math.sqrt(acc))
            hk += x2 * ratek[p]
        h += hk
    h *= scale
    if not h > 0.0:
        return
    a = y * invariant_step_compiled(loss, z0, h) / h * scale
    for p in range(n):
        u0[idx[p]] += (a * rate0[p]) * val[p]
    if b > 0.0:
        for p in range(n):
            uk[idx[p]] += (a * ratek[p]) * val[p]


@njit(cache=True)
def adaptive_pass(
    call: KernelPass,
    losses: np.ndarray,
    etas: np.ndarray,
    couplings: np.ndarray,
    ridges: np.ndarray,
    U0: np.ndarray,
    U: np.ndarray,
    G0: np.ndarray,
    G: np.ndarray,
    S: np.ndarray,
    stats: np.ndarray,
    mistakes: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Test-then-train over ``call``'s rows (module docstring); fills ``call.scores``."""
    M, dim = U0.shape
    dense = call.dense
    idx = np.empty(dim, dtype=np.int64)
    val = np.empty(dim)
    rate0 = np.empty(dim)
    ratek = np.empty(dim)
    scores = np.empty(M)
    for i in range(call.y.shape[0]):
        n = _nonzeros(dense, idx, val, load_row(call, i, dim, idx, val))
        k = call.tasks[i]
        y = call.y[i]
        for m in range(M):
            scores[m] = _dot(U0[m], idx, val, n) + _dot(U[m, k], idx, val, n)
        call.scores[i] = scores[leader(mistakes)]
        if n == 0:
            for m in range(M):
                if (scores[m] >= 0.0) != (y > 0.0):
                    mistakes[m] += 1
            continue
        nsum = 0.0
        for p in range(n):
            j = idx[p]
            a = abs(val[p])
            if a > S[j]:
                S[j] = a
            q = val[p] / S[j]
            nsum += q * q
        stats[0] += nsum
        stats[1] += 1.0
        scale = math.sqrt(stats[1] / stats[0])
        for m in range(M):
            p_m = scores[m]
            if (p_m >= 0.0) != (y > 0.0):
                mistakes[m] += 1
            loss = losses[m]
            if loss == AROW:
                _arow_step(
                    U0[m], G0[m], U[m, k], G[m, k], idx, val, n, y, y * p_m, couplings[m], ridges[m]
                )
            else:
                _gradient_step(
                    loss,
                    etas[m],
                    U0[m],
                    G0[m],
                    U[m, k],
                    G[m, k],
                    S,
                    idx,
                    val,
                    n,
                    y,
                    y * p_m,
                    couplings[m],
                    scale,
                    rate0,
                    ratek,
                )


def warm() -> None:
    """Compile :func:`adaptive_pass` for dense and CSR rows (dimension 3 + bias) on tiny inputs."""
    for rows in warm_rows():
        call = warm_call(rows, 1)._replace(active=False)
        M = 3
        adaptive_pass(
            call,
            np.array([0, 1, 2], dtype=np.int64),
            np.ones(M),
            np.ones(M),
            np.ones(M),
            np.zeros((M, 4)),
            np.zeros((M, 2, 4)),
            np.ones((M, 4)),
            np.ones((M, 2, 4)),
            np.zeros(4),
            np.zeros(2),
            np.zeros(M, dtype=np.int64),
        )
