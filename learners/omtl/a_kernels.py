"""Compiled updates of the interaction matrix A, saha2011 Eqs. (3.7)-(3.10).

The numba twins of :mod:`learners.omtl.updates` (the numpy reference), called
by the weight pass of :mod:`learners.omtl.kernels` at the rounds where
Algorithm 1 (line 14) updates A, so that a whole batch, weight updates and A
updates, is one kernel call (docs/algorithms.md Sec. 2.3 and 2.8).

Each update writes the new ``A`` and ``A^{-1}`` (and ``log A`` for Eq. 3.8) in
place and follows the reference operation by operation: the same symmetric
eigendecomposition (LAPACK ``dsyevd`` through :func:`numpy.linalg.eigh`, the
routine :func:`learners.omtl.numerics.sym_eigh` calls), the same floors and
normalisations, sums in numpy's pairwise order (:func:`pairwise_sum`), and
``Q diag(f) Q^T`` as a BLAS product. Results equal the reference up to the
rounding of the matrix product and of ``exp``/``log``.

An update returns False without touching the state when the matrix to
decompose is not finite: the caller then runs the numpy reference, which
defines what happens to NaN and infinite entries.

``hp`` packs the hyperparameters (:data:`HP_FIELDS`); ``kind`` selects the
equation (:data:`KIND_LOGDET`, ...).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "HP_FIELDS",
    "KIND_BATCHOPT",
    "KIND_COV",
    "KIND_LOGDET",
    "KIND_NONE",
    "KIND_VONNEUMANN",
    "a_update",
    "pairwise_sum",
]

#: No compiled A update: the weight pass stops and the learner updates A in numpy.
KIND_NONE = 0
#: Eq. (3.7), :func:`learners.omtl.updates.logdet_update`.
KIND_LOGDET = 1
#: Eq. (3.8), :func:`learners.omtl.updates.vonneumann_log_step`.
KIND_VONNEUMANN = 2
#: Eq. (3.9), :func:`learners.omtl.updates.covariance_update`.
KIND_COV = 3
#: Eq. (3.10), :func:`learners.omtl.updates.batchopt_update`.
KIND_BATCHOPT = 4

#: The entries of ``hp``: eta, eta divided by tr(G) (1/0), normalize_trace (1/0),
#: eig_floor, ridge, cov_is_A_inverse (1/0), d (the rows of the covariance).
HP_FIELDS = ("eta", "eta_trace", "normalize", "floor", "ridge", "as_inverse", "n_rows")

_TINY = 1e-300  # learners.omtl.numerics.TINY


@njit(cache=True)
def _pairwise_block(a: np.ndarray, lo: int, n: int, stride: int) -> float:
    """numpy's ``pairwise_sum`` of at most 128 terms: eight accumulators in a fixed order."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i * stride]
        return res
    r0 = a[lo]
    r1 = a[lo + stride]
    r2 = a[lo + 2 * stride]
    r3 = a[lo + 3 * stride]
    r4 = a[lo + 4 * stride]
    r5 = a[lo + 5 * stride]
    r6 = a[lo + 6 * stride]
    r7 = a[lo + 7 * stride]
    i = 8
    end = n - n % 8
    while i < end:
        p = lo + i * stride
        r0 += a[p]
        r1 += a[p + stride]
        r2 += a[p + 2 * stride]
        r3 += a[p + 3 * stride]
        r4 += a[p + 4 * stride]
        r5 += a[p + 5 * stride]
        r6 += a[p + 6 * stride]
        r7 += a[p + 7 * stride]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i * stride]
        i += 1
    return res


@njit(cache=True)
def _pairwise(a: np.ndarray, lo: int, n: int, stride: int) -> float:
    """numpy's pairwise sum of ``n`` terms from ``a[lo]``, ``stride`` apart.

    Above 128 terms numpy splits at ``n2 = n/2`` rounded down to a multiple of 8
    and adds the two halves; the same tree is walked here with an explicit stack
    (numba cannot cache self-recursive functions).
    """
    if n <= 128:
        return _pairwise_block(a, lo, n, stride)
    depth = 64
    los = np.empty(depth, dtype=np.int64)
    ns = np.empty(depth, dtype=np.int64)
    phase = np.zeros(depth, dtype=np.int64)
    vals = np.empty(depth)
    top, nvals = 0, 0
    los[0], ns[0] = lo, n
    while top >= 0:
        m = ns[top]
        if m <= 128:
            vals[nvals] = _pairwise_block(a, los[top], m, stride)
            nvals += 1
            top -= 1
            continue
        n2 = m // 2
        n2 -= n2 % 8
        if phase[top] == 0:  # the first half
            phase[top] = 1
            los[top + 1], ns[top + 1], phase[top + 1] = los[top], n2, 0
            top += 1
        elif phase[top] == 1:  # the second half
            phase[top] = 2
            los[top + 1], ns[top + 1], phase[top + 1] = los[top] + n2 * stride, m - n2, 0
            top += 1
        else:  # both done: first + second
            vals[nvals - 2] = vals[nvals - 2] + vals[nvals - 1]
            nvals -= 1
            top -= 1
    return vals[0]


@njit(cache=True)
def pairwise_sum(v: np.ndarray) -> float:
    """``v.sum()`` of a contiguous 1-D array in numpy's pairwise order (bit-identical)."""
    return _pairwise(v, 0, v.shape[0], 1)


@njit(cache=True)
def _trace(M: np.ndarray) -> float:
    """``np.trace(M)`` of a C-contiguous square matrix, bit-identical."""
    K = M.shape[0]
    return _pairwise(M.reshape(K * K), 0, K, K + 1)


@njit(cache=True)
def _sym_into(M: np.ndarray, out: np.ndarray) -> None:
    """``out = (M + M^T) / 2`` (numerics.sym); ``out`` must not be ``M``."""
    K = M.shape[0]
    for a in range(K):
        for b in range(K):
            out[a, b] = 0.5 * (M[a, b] + M[b, a])


@njit(cache=True)
def _finite(M: np.ndarray) -> bool:
    K = M.shape[0]
    for a in range(K):
        for b in range(K):
            if not np.isfinite(M[a, b]):
                return False
    return True


@njit(cache=True)
def _assemble_into(Q: np.ndarray, f: np.ndarray, out: np.ndarray) -> None:
    """``out = sym(Q diag(f) Q^T)`` (numerics.assemble)."""
    K = Q.shape[0]
    B = np.empty((K, K))
    for a in range(K):
        for k in range(K):
            B[a, k] = Q[a, k] * f[k]
    _sym_into(B @ Q.T, out)


@njit(cache=True)
def _scale_into(M: np.ndarray, factor: float, divide: bool) -> None:
    K = M.shape[0]
    for a in range(K):
        for b in range(K):
            M[a, b] = M[a, b] / factor if divide else M[a, b] * factor


@njit(cache=True)
def _normalize_trace(M: np.ndarray, target: float) -> float:
    """numerics.normalize_trace in place; returns the factor (1 when the trace is not positive)."""
    tr = _trace(M)
    if not tr > _TINY:
        return 1.0
    factor = target / tr
    _scale_into(M, factor, False)
    return factor


@njit(cache=True)
def _floored_inverse_pair(M: np.ndarray, floor: float, P: np.ndarray, Pinv: np.ndarray) -> bool:
    """numerics.spd_inverse_pair: ``P`` = floored M, ``Pinv`` its inverse; False if M not finite."""
    S = np.empty_like(M)
    _sym_into(M, S)
    if not _finite(S):
        return False
    lam, Q = np.linalg.eigh(S)
    top = max(lam[-1], _TINY)
    lam = np.maximum(lam, floor * top)
    _assemble_into(Q, lam, P)
    _assemble_into(Q, 1.0 / lam, Pinv)
    return True


@njit(cache=True)
def _effective_eta(hp: np.ndarray, G: np.ndarray) -> float:
    """TaskRelationships._effective_eta: eta, divided by tr(G) with eta_scale 'trace'."""
    if hp[1] == 0.0:
        return hp[0]
    tr = _trace(G)
    return hp[0] / tr if tr > 0.0 else 0.0


@njit(cache=True)
def _logdet(hp: np.ndarray, A: np.ndarray, Ainv: np.ndarray, G: np.ndarray) -> bool:
    """updates.logdet_update, Eq. (3.7): ``A^{-1} <- A^{-1} + eta G``, floored, then trace."""
    K = G.shape[0]
    eta = _effective_eta(hp, G)
    T = np.empty((K, K))
    for a in range(K):
        for b in range(K):
            T[a, b] = Ainv[a, b] + eta * G[a, b]
    M = np.empty((K, K))
    _sym_into(T, M)
    P = np.empty((K, K))
    Anew = np.empty((K, K))
    if not _floored_inverse_pair(M, hp[3], P, Anew):
        return False
    if hp[2] != 0.0:
        factor = _normalize_trace(Anew, 1.0)
        _scale_into(P, factor, True)
    A[:, :] = Anew
    Ainv[:, :] = P
    return True


@njit(cache=True)
def _vonneumann(
    hp: np.ndarray, A: np.ndarray, Ainv: np.ndarray, L: np.ndarray, G: np.ndarray
) -> bool:
    """updates.vonneumann_log_step, Eq. (3.8) in the log domain (``L = log A`` in place)."""
    K = G.shape[0]
    eta = _effective_eta(hp, G)
    T = np.empty((K, K))
    for a in range(K):
        for b in range(K):
            T[a, b] = L[a, b] - eta * G[a, b]
    M = np.empty((K, K))
    _sym_into(T, M)
    if not _finite(M):
        return False
    mu, Q = np.linalg.eigh(M)
    top = mu[-1]
    log_floor = math.log(hp[3])
    log_a = np.maximum(mu - top, log_floor)
    if hp[2] != 0.0:
        log_a -= math.log(pairwise_sum(np.exp(log_a)))
    else:
        log_a = np.maximum(log_a + top, log_floor)
    _assemble_into(Q, log_a, L)
    _assemble_into(Q, np.exp(log_a), A)
    _assemble_into(Q, np.exp(-log_a), Ainv)
    return True


@njit(cache=True)
def _covariance(
    hp: np.ndarray, A: np.ndarray, Ainv: np.ndarray, G: np.ndarray, colsum: np.ndarray
) -> bool:
    """updates.covariance_update, Eq. (3.9): A from the ridged ``cov(W)``."""
    K = G.shape[0]
    d = hp[6]
    div = max(d - 1.0, 1.0)
    T = np.empty((K, K))
    for a in range(K):
        for b in range(K):
            T[a, b] = (G[a, b] - colsum[a] * colsum[b] / d) / div
    C = np.empty((K, K))
    _sym_into(T, C)
    eps = hp[4] * max(_trace(C) / K, 1e-12)  # updates.ridged
    for a in range(K):
        C[a, a] = C[a, a] + eps
    P = np.empty((K, K))
    Pinv = np.empty((K, K))
    if hp[5] != 0.0:  # the covariance read as A^{-1}
        if hp[2] != 0.0:
            _normalize_trace(C, float(K * K))
        if not _floored_inverse_pair(C, hp[3], P, Pinv):
            return False
        Ainv[:, :] = P
        A[:, :] = Pinv
        return True
    if hp[2] != 0.0:
        _normalize_trace(C, 1.0)
    if not _floored_inverse_pair(C, hp[3], P, Pinv):
        return False
    A[:, :] = P
    Ainv[:, :] = Pinv
    return True


@njit(cache=True)
def _batchopt(hp: np.ndarray, A: np.ndarray, Ainv: np.ndarray, G: np.ndarray) -> bool:
    """updates.batchopt_update, Eq. (3.10): ``A = G^{1/2} / tr(G^{1/2})``, ridged and floored."""
    K = G.shape[0]
    M = np.empty((K, K))
    _sym_into(G, M)
    if not _finite(M):
        return False
    lam, Q = np.linalg.eigh(M)
    root = np.sqrt(np.maximum(lam, 0.0))
    total = pairwise_sum(root)
    S = root / total if total > _TINY else np.full(K, 1.0 / K)
    S = S + hp[4] * max(pairwise_sum(S) / K, 1e-12)
    S = S / pairwise_sum(S)
    as_inverse = hp[5] != 0.0
    if as_inverse:
        S = S * float(K * K)
    S = np.maximum(S, hp[3] * S.max())
    if as_inverse:
        _assemble_into(Q, 1.0 / S, A)
        _assemble_into(Q, S, Ainv)
    else:
        _assemble_into(Q, S, A)
        _assemble_into(Q, 1.0 / S, Ainv)
    return True


@njit(cache=True)
def a_update(
    kind: int,
    hp: np.ndarray,
    A: np.ndarray,
    Ainv: np.ndarray,
    L: np.ndarray,
    G: np.ndarray,
    colsum: np.ndarray,
) -> bool:
    """The A update ``kind`` from the current ``G`` (and ``colsum``), in place.

    Returns False, with nothing changed, for :data:`KIND_NONE` or a matrix that is
    not finite (the learner then runs the numpy reference).
    """
    if kind == KIND_LOGDET:
        return _logdet(hp, A, Ainv, G)
    if kind == KIND_VONNEUMANN:
        return _vonneumann(hp, A, Ainv, L, G)
    if kind == KIND_COV:
        return _covariance(hp, A, Ainv, G, colsum)
    if kind == KIND_BATCHOPT:
        return _batchopt(hp, A, Ainv, G)
    return False
