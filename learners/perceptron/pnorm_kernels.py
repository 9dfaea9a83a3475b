"""Compiled kernels of the p-norm multitask Perceptron, O(K nnz) per event (numba).

The learner (:mod:`learners.perceptron.pnorm`) predicts with
``U = R grad (1/2)||theta||_p^2`` (``R = A^{-1/2}``). Materialising ``U`` costs
O(K^2 d) after every mistake; these kernels never form it. With a scale
``c`` (a power of two, so dividing by it is exact) they keep

* ``Phi = sign(theta) (|theta| / c)^{p-1}`` (K x d), entry by entry,
* ``S = sum (|theta| / c)^p``,

so that ``grad (1/2)||theta||_p^2 = c Phi / S^{(p-2)/p}`` and the score of
``(x, t)`` is ``c sum_j R_tj <Phi_j, x> / S^{(p-2)/p}``: O(K nnz). A mistake
changes ``theta`` in K nnz entries; their ``Phi`` entries and their terms of ``S``
are updated in place, also O(K nnz). :func:`rebuild` recomputes ``Phi``, ``S``
and ``c`` from ``theta`` exactly (O(K d)); the kernels call it every
``every`` mistakes (``every ~ d / 64``, so its cost per mistake stays
O(K nnz) amortised and the running sum ``S`` does not drift) and whenever a
term nears overflow or ``S`` underflow.

``scalars`` holds ``[c, S, mistakes since rebuild, every, p]``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.kernels import NO_INDEX, dot, register_warmup

__all__ = ["SCALARS", "learn_csr", "learn_dense", "rebuild", "score", "step"]

#: Slots of ``scalars``.
SCALE, SUM, SINCE, EVERY, P = range(5)
#: Number of slots of ``scalars``.
SCALARS = 5

#: log2 bound of ``(|theta| / c)^p``: beyond it the next score triggers a rebuild.
_EXP_LIMIT = 256.0


@njit(cache=True)
def rebuild(theta: np.ndarray, Phi: np.ndarray, scalars: np.ndarray) -> None:
    """Recompute ``c`` (a power of two near ``max |theta|``), ``Phi`` and ``S`` from ``theta``.

    ``c`` is kept between ``2^-1022`` and ``2^1023``, where it and ``1 / c`` are normal
    doubles, so that a ``theta`` of subnormal entries (rows of values below about 1e-308)
    is scaled too. ``math.ldexp`` forms it exactly: ``2.0 ** e`` is computed as
    ``1 / 2^-e``, which is 0 for ``e <= -1024``."""
    p = scalars[P]
    m = 0.0
    for j in range(theta.shape[0]):
        for i in range(theta.shape[1]):
            m = max(m, abs(theta[j, i]))
    if m == 0.0:
        scalars[SCALE] = 1.0
    else:
        scalars[SCALE] = math.ldexp(1.0, min(max(math.ceil(math.log2(m)), -1022), 1023))
    inv = 1.0 / scalars[SCALE]
    total = 0.0
    for j in range(theta.shape[0]):
        for i in range(theta.shape[1]):
            a = abs(theta[j, i]) * inv
            if a == 0.0:
                Phi[j, i] = 0.0
            else:
                power = a ** (p - 1.0)
                Phi[j, i] = math.copysign(power, theta[j, i])
                total += power * a
    scalars[SUM] = total
    scalars[SINCE] = 0.0


@njit(cache=True)
def score(
    Phi: np.ndarray, R: np.ndarray, idx: np.ndarray, val: np.ndarray, t: int, scalars: np.ndarray
) -> float:
    """``c sum_j R_tj <Phi_j, x> / S^{(p-2)/p}`` (module docstring); 0 while theta is 0."""
    total = scalars[SUM]
    if total == 0.0:
        return 0.0
    acc = 0.0
    for j in range(R.shape[0]):
        r = R[t, j]
        if r != 0.0:
            acc += r * dot(Phi[j], idx, val)
    p = scalars[P]
    return scalars[SCALE] * acc / total ** ((p - 2.0) / p)


@njit(cache=True)
def _update(
    theta: np.ndarray,
    Phi: np.ndarray,
    R: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    y: float,
    t: int,
    scalars: np.ndarray,
) -> bool:
    """``theta += y R[:, t] x`` with ``Phi`` and ``S`` kept in step; True if a rebuild is due."""
    p = scalars[P]
    inv = 1.0 / scalars[SCALE]
    limit = 2.0 ** (_EXP_LIMIT / p)
    total = scalars[SUM]
    due = False
    dense = idx.shape[0] == 0
    for j in range(theta.shape[0]):
        c = y * R[j, t]
        if c == 0.0:
            continue
        for k in range(val.shape[0]):
            i = k if dense else idx[k]
            old = theta[j, i]
            new = old + c * val[k]
            theta[j, i] = new
            a_old = abs(old) * inv
            a_new = abs(new) * inv
            if a_old != 0.0:
                total -= abs(Phi[j, i]) * a_old
            if a_new == 0.0:
                Phi[j, i] = 0.0
            else:
                power = a_new ** (p - 1.0)
                Phi[j, i] = math.copysign(power, new)
                total += power * a_new
                due = due or a_new > limit
    scalars[SUM] = total
    scalars[SINCE] += 1.0
    return due or scalars[SINCE] >= scalars[EVERY] or total < 2.0**-_EXP_LIMIT


@njit(cache=True)
def step(
    theta: np.ndarray,
    V: np.ndarray,
    Phi: np.ndarray,
    R: np.ndarray,
    idx: np.ndarray,
    val: np.ndarray,
    y: float,
    t: int,
    scalars: np.ndarray,
) -> tuple[float, bool]:
    """Test-then-train on one row: the score before learning, and whether it was a mistake."""
    f = score(Phi, R, idx, val, t, scalars)
    if not math.isfinite(f) or (f >= 0.0) == (y > 0.0):
        return f, False
    if idx.shape[0] == 0:
        for i in range(val.shape[0]):
            V[t, i] += y * val[i]
    else:
        for k in range(idx.shape[0]):
            V[t, idx[k]] += y * val[k]
    if _update(theta, Phi, R, idx, val, y, t, scalars):
        rebuild(theta, Phi, scalars)
    return f, True


@njit(cache=True)
def learn_dense(
    theta: np.ndarray,
    V: np.ndarray,
    Phi: np.ndarray,
    R: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    scalars: np.ndarray,
    scores: np.ndarray,
) -> int:
    """Test-then-train over the dense rows of ``X`` in order; returns the number of mistakes."""
    mistakes = 0
    for r in range(X.shape[0]):
        f, wrong = step(theta, V, Phi, R, NO_INDEX, X[r], y[r], tasks[r], scalars)
        scores[r] = f
        mistakes += wrong
    return mistakes


@njit(cache=True)
def learn_csr(
    theta: np.ndarray,
    V: np.ndarray,
    Phi: np.ndarray,
    R: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    scalars: np.ndarray,
    scores: np.ndarray,
) -> int:
    """:func:`learn_dense` for a CSR batch."""
    mistakes = 0
    for r in range(indptr.shape[0] - 1):
        a, b = indptr[r], indptr[r + 1]
        f, wrong = step(theta, V, Phi, R, indices[a:b], data[a:b], y[r], tasks[r], scalars)
        scores[r] = f
        mistakes += wrong
    return mistakes


@register_warmup
def warm_pnorm_kernels() -> None:
    """Compile the p-norm kernels (dense, sparse, batch)."""
    theta, V, Phi = np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((2, 4))
    R = np.eye(2)
    scalars = np.array([1.0, 0.0, 0.0, 1.0, 3.0])
    x = np.ones(4)
    step(theta, V, Phi, R, NO_INDEX, x, -1.0, 0, scalars)
    step(theta, V, Phi, R, np.array([1, 3]), x[:2], 1.0, 1, scalars)
    y, tasks = np.ones(2), np.zeros(2, dtype=np.int64)
    learn_dense(theta, V, Phi, R, np.ones((2, 4)), y, tasks, scalars, np.empty(2))
    for index in (np.int64, np.int32):
        indptr, indices = np.array([0, 2, 4], dtype=index), np.array([0, 2, 1, 3], dtype=index)
        learn_csr(theta, V, Phi, R, indptr, indices, x, y, tasks, scalars, np.empty(2))
