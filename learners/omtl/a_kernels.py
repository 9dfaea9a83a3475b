"""Compiled updates of the interaction matrix A, saha2011 Eqs. (3.7)-(3.10).

The numba twins of :mod:`learners.omtl.updates` (the numpy reference), called
by the weight pass of :mod:`learners.omtl.kernels` at the rounds where
Algorithm 1 (line 14) updates A, so that a whole batch, weight updates and A
updates, is one kernel call (docs/algorithms.md Sec. 2.3 and 2.8).

Each update writes the new ``A`` and ``A^{-1}`` (and ``log A`` for Eq. 3.8) in
place, or holds them (below), and follows the reference step by step: the same floors and
normalisations, sums of eigenvalues and traces in numpy's pairwise order
(:func:`pairwise_sum`). The symmetric eigendecomposition is the compiled
:func:`learners.omtl.eigen.sym_eig` (Householder tridiagonalisation and implicit
QL, the method of LAPACK's ``dsyevd`` for small matrices, without its calling
overhead) and ``Q diag(f) Q^T`` a compiled product
(:func:`learners.omtl.eigen.assemble_rows`); scratch arrays come from
:func:`workspace`, allocated once per kernel call. Results equal the reference
up to the rounding of the decomposition, of the product and of ``exp``/``log``
(docs/algorithms.md Sec. 2.8).

**Held, not assembled.** The von Neumann and batch-optimal updates (Eqs. 3.8
and 3.10) end in ``A = Q diag(f) Q^T`` and ``A^{-1} = Q diag(1/f) Q^T``: two
``K^3`` products, which the weight pass never reads whole. It reads one column of
``A^{-1}`` per mistake, the task's (Eq. 3.3). So these updates leave the two
matrices *held* as their eigenvectors (``mats[1]``) and eigenvalue vectors (rows
of ``vecs``), marked in ``pending``; :func:`ainv_column` computes the column a
mistake needs from them in ``O(K^2)``, and :func:`settle` assembles both matrices
when the pass returns or an update that reads them comes. Each entry is summed
in the order :func:`learners.omtl.eigen.assemble_rows` sums it, so the numbers
are the same bits either way.

**Warm starts.** The von Neumann update decomposes ``log A - eta G``, which
moves little from one mistake to the next: it starts from the previous
eigenvectors (:func:`learners.omtl.jacobi.warm_eig_step`). ``log A`` is held in
them too, with its eigenvalues (``vecs[4]``): in that basis it is diagonal, so
the update needs only ``Z G Z^T``, and ``log A`` is assembled when the pass
returns (:func:`settle`), not at every update. The learner keeps the eigenpairs
as state (``eigenpairs_``, loaded and stored in place by
:func:`load_basis` and :func:`store_basis`), so that a stream gives the same
numbers however it is cut into calls. The first update, one after an update of
the numpy path, and one whose warm start does not converge decompose the
assembled ``log A - eta G`` from scratch.

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

from learners.omtl.eigen import SMALL_K, assemble_rows, sym_eig
from learners.omtl.jacobi import warm_eig_step

__all__ = [
    "HP_FIELDS",
    "KIND_BATCHOPT",
    "KIND_COV",
    "KIND_LOGDET",
    "KIND_NONE",
    "KIND_VONNEUMANN",
    "a_update",
    "a_update_into",
    "ainv_column",
    "load_basis",
    "pairwise_sum",
    "settle",
    "store_basis",
    "workspace",
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

#: Every this many warm starts the basis is orthonormalised again in full; the ones
#: between renormalise its rows only (:func:`learners.omtl.jacobi.warm_eig_step`).
ORTHONORMALISE_EVERY = 4


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
def _finite(M: np.ndarray) -> bool:
    """Whether every entry is finite (one pass of comparisons, no early exit to branch on)."""
    K = M.shape[0]
    bad = 0
    for a in range(K):
        row = M[a]
        for b in range(K):
            bad |= not abs(row[b]) < math.inf
    return bad == 0


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
def workspace(K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Scratch arrays of one A update of K tasks: ``(mats, vecs, ework, rows, pending)``.

    Allocated once per kernel call and reused by every update of the call.
    ``pending`` says whether ``A`` and ``A^{-1}`` are held (module docstring):
    ``[held, row of vecs with A's eigenvalues, row with A^{-1}'s, basis, warm starts,
    log A held]``: whether ``mats[1]`` holds the eigenvectors of the last von Neumann
    update, with the eigenvalues of ``log A`` in ``vecs[4]``, how many warm starts led
    to them (:func:`load_basis`), and whether ``log A`` is held in them, not yet
    assembled (:func:`settle`).
    """
    return (
        np.empty((2, K, K)),
        np.empty((5, K)),
        np.empty(2 * K * K + 4 * K),
        np.empty(K, dtype=np.int64),
        np.zeros(6, dtype=np.int64),
    )


@njit(cache=True)
def load_basis(
    pending: np.ndarray, mats: np.ndarray, vecs: np.ndarray, basis: np.ndarray, age: np.ndarray
) -> None:
    """Start the workspace from the learner's eigenpairs of ``log A``, kept from its last
    von Neumann update after ``age[0]`` warm starts (``age[0] < 0``: none kept):
    ``basis`` (K + 1, K) holds the eigenvectors in its first K rows and their
    eigenvalues in the last (an empty ``basis``: a learner that keeps none)."""
    K = mats.shape[1]
    pending[3] = 0
    pending[5] = 0
    if basis.shape[0] != K + 1 or age[0] < 0:
        return
    mats[1, :, :] = basis[:K]
    vecs[4, :] = basis[K]
    pending[3] = 1
    pending[4] = age[0]


@njit(cache=True)
def store_basis(
    pending: np.ndarray, mats: np.ndarray, vecs: np.ndarray, basis: np.ndarray, age: np.ndarray
) -> None:
    """Hand the workspace's eigenpairs back to the learner (:func:`load_basis`)."""
    K = mats.shape[1]
    if basis.shape[0] != K + 1:
        return
    if pending[3] == 0:
        age[0] = -1
        return
    basis[:K, :] = mats[1]
    basis[K, :] = vecs[4]
    age[0] = pending[4]


@njit(cache=True)
def _hold(
    pending: np.ndarray,
    mats: np.ndarray,
    vecs: np.ndarray,
    A: np.ndarray,
    Ainv: np.ndarray,
    a_row: int,
    ainv_row: int,
) -> None:
    """Hold ``A = Z^T diag(vecs[a_row]) Z`` and ``A^{-1}`` likewise (``Z = mats[1]``).

    Above :data:`learners.omtl.eigen.SMALL_K` the products are BLAS's, whose
    entries cannot be summed one at a time in the same order: assembled at once.
    """
    if A.shape[0] > SMALL_K:
        assemble_rows(mats[1], vecs[a_row], A)
        assemble_rows(mats[1], vecs[ainv_row], Ainv)
        pending[0] = 0
        return
    pending[0] = 1
    pending[1] = a_row
    pending[2] = ainv_row


@njit(cache=True)
def settle(
    pending: np.ndarray,
    mats: np.ndarray,
    vecs: np.ndarray,
    A: np.ndarray,
    Ainv: np.ndarray,
    L: np.ndarray,
) -> None:
    """Assemble ``A`` and ``A^{-1}`` if they are held, and ``L = log A`` if it is."""
    if pending[5] == 1:
        assemble_rows(mats[1], vecs[4], L)
        pending[5] = 0
    if pending[0] == 0:
        return
    assemble_rows(mats[1], vecs[pending[1]], A)
    assemble_rows(mats[1], vecs[pending[2]], Ainv)
    pending[0] = 0


@njit(cache=True)
def ainv_column(
    pending: np.ndarray,
    mats: np.ndarray,
    vecs: np.ndarray,
    Ainv: np.ndarray,
    t: int,
    scale: float,
    out: np.ndarray,
) -> None:
    """``out[k] = scale * A^{-1}[k, t]``, from the held eigenpairs when ``A^{-1}`` is held.

    The bits of :func:`learners.omtl.eigen.assemble_rows`: entry ``(a, b)`` sums
    ``(Z[j, a] f[j]) Z[j, b]`` over ``j`` in order from zero, and off the diagonal the
    mean of ``(a, b)`` and ``(b, a)``.
    """
    K = Ainv.shape[0]
    if pending[0] == 0:
        for k in range(K):
            out[k] = scale * Ainv[k, t]
        return
    Z = mats[1]
    f = vecs[pending[2]]
    for k in range(K):
        s_kt = 0.0
        s_tk = 0.0
        for j in range(K):
            s_kt += (Z[j, k] * f[j]) * Z[j, t]
            s_tk += (Z[j, t] * f[j]) * Z[j, k]
        out[k] = scale * (s_kt if k == t else 0.5 * (s_kt + s_tk))


@njit(cache=True)
def _cholesky_inverse(M: np.ndarray, Minv: np.ndarray, Lw: np.ndarray, X: np.ndarray) -> bool:
    """``Minv = M^{-1}`` from the Cholesky factor ``M = L L^T`` (exactly symmetric).

    ``Lw`` and ``X`` are (K, K) scratch (L and ``L^{-1}``, lower triangles). False,
    with ``Minv`` undefined, when a pivot is not positive (M not numerically PD).
    """
    n = M.shape[0]
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= Lw[j, k] * Lw[j, k]
        if not s > 0.0:
            return False
        ljj = math.sqrt(s)
        Lw[j, j] = ljj
        r = 1.0 / ljj
        X[j, j] = r
        for i in range(j + 1, n):
            t = M[i, j]
            for k in range(j):
                t -= Lw[i, k] * Lw[j, k]
            Lw[i, j] = t * r
    for j in range(n):  # X = L^{-1}, column by column (forward substitution)
        for i in range(j + 1, n):
            t = 0.0
            for k in range(j, i):
                t -= Lw[i, k] * X[k, j]
            X[i, j] = t * X[i, i]
    for a in range(n):  # M^{-1} = X^T X
        for b in range(a, n):
            t = 0.0
            for k in range(b, n):
                t += X[k, a] * X[k, b]
            Minv[a, b] = t
            Minv[b, a] = t
    return True


@njit(cache=True)
def _floored_inverse_pair(
    M: np.ndarray,
    floor: float,
    P: np.ndarray,
    Pinv: np.ndarray,
    mats: np.ndarray,
    vecs: np.ndarray,
    ework: np.ndarray,
    rows: np.ndarray,
) -> None:
    """numerics.spd_inverse_pair of the finite, exactly symmetric ``M``: ``P`` = floored M,
    ``Pinv`` its inverse (``sym(M) = M``, so the reference's second ``sym`` changes nothing).

    When M is positive definite with ``tr(M) tr(M^{-1}) <= 1 / (2 floor)``, every
    eigenvalue is at least ``1/tr(M^{-1}) >= 2 floor tr(M) > floor * lam_max``: the
    floor changes nothing, ``P = M`` and ``Pinv`` is the Cholesky inverse, without an
    eigendecomposition. Otherwise (or when the factorisation fails) the floors apply
    through :func:`learners.omtl.eigen.sym_eig`, as in the reference.
    """
    K = M.shape[0]
    Z = mats[1]
    if _cholesky_inverse(M, Pinv, ework[: K * K].reshape((K, K)), Z):
        tr = 0.0
        tr_inv = 0.0
        for k in range(K):
            tr += M[k, k]
            tr_inv += Pinv[k, k]
        if tr * tr_inv <= 0.5 / floor:
            P[:, :] = M
            return
    lam = vecs[0]
    inv = vecs[1]
    sym_eig(M, lam, Z, ework, rows)
    bound = floor * max(lam[K - 1], _TINY)
    binds = lam[0] < bound
    for k in range(K):
        lam[k] = max(lam[k], bound)
        inv[k] = 1.0 / lam[k]
    if binds:
        assemble_rows(Z, lam, P)
    else:  # the floored M is M itself, as in the reference
        P[:, :] = M
    assemble_rows(Z, inv, Pinv)


@njit(cache=True)
def _effective_eta(hp: np.ndarray, G: np.ndarray) -> float:
    """TaskRelationships._effective_eta: eta, divided by tr(G) with eta_scale 'trace'."""
    if hp[1] == 0.0:
        return hp[0]
    tr = _trace(G)
    return hp[0] / tr if tr > 0.0 else 0.0


@njit(cache=True)
def _logdet(
    hp: np.ndarray,
    A: np.ndarray,
    Ainv: np.ndarray,
    G: np.ndarray,
    mats: np.ndarray,
    vecs: np.ndarray,
    ework: np.ndarray,
    rows: np.ndarray,
) -> bool:
    """updates.logdet_update, Eq. (3.7): ``A^{-1} <- A^{-1} + eta G``, floored, then trace."""
    K = G.shape[0]
    eta = _effective_eta(hp, G)
    M = mats[0]
    for a in range(K):
        for b in range(K):
            M[a, b] = 0.5 * ((Ainv[a, b] + eta * G[a, b]) + (Ainv[b, a] + eta * G[b, a]))
    if not _finite(M):
        return False
    _floored_inverse_pair(M, hp[3], Ainv, A, mats, vecs, ework, rows)
    if hp[2] != 0.0:
        factor = _normalize_trace(A, 1.0)
        _scale_into(Ainv, factor, True)
    return True


@njit(cache=True)
def _vonneumann(
    hp: np.ndarray,
    A: np.ndarray,
    Ainv: np.ndarray,
    L: np.ndarray,
    G: np.ndarray,
    mats: np.ndarray,
    vecs: np.ndarray,
    ework: np.ndarray,
    rows: np.ndarray,
    pending: np.ndarray,
) -> bool:
    """updates.vonneumann_log_step, Eq. (3.8) in the log domain: ``L = log A``, ``A`` and
    ``A^{-1}`` all held in the new eigenpairs (:func:`_hold`, :func:`settle`).

    When ``mats[1]`` holds the eigenvectors of the last update and ``vecs[4]`` the
    eigenvalues of ``log A`` in them, the decomposition of ``log A - eta G`` starts
    from there (:func:`learners.omtl.jacobi.warm_eig_step`: ``log A`` is diagonal in
    that basis, so it is never assembled); otherwise, or when the warm start does not
    converge, it decomposes the assembled matrix from scratch (module docstring).
    """
    K = G.shape[0]
    eta = _effective_eta(hp, G)
    Z = mats[1]
    M = mats[0]
    mu = vecs[0]
    log_a = vecs[4]
    ex = vecs[2]
    inv = vecs[3]
    warm = pending[3] == 1 and K <= SMALL_K
    converged = 0
    if warm:
        M[:, :] = Z  # the basis log A is held in, should the warm start fail
        converged = warm_eig_step(
            log_a, G, eta, Z, mu, ework, rows, (pending[4] + 1) % ORTHONORMALISE_EVERY == 0
        )
        if converged != 1 and pending[5] == 1:  # log A for the reference or the cold start
            assemble_rows(M, log_a, L)
            pending[5] = 0
        if converged == -1:  # the basis untouched
            return False
    if converged == 1:
        pending[4] += 1
    else:  # log A assembled: held only in a basis a warm start starts from
        for a in range(K):
            for b in range(K):
                M[a, b] = 0.5 * ((L[a, b] - eta * G[a, b]) + (L[b, a] - eta * G[b, a]))
        if not _finite(M):
            if warm:  # the warm start that gave up left the basis turned: no log A in it
                pending[3] = 0
            return False
        sym_eig(M, mu, Z, ework, rows)
        pending[3] = 1
        pending[4] = 0
    top = mu[K - 1]
    log_floor = math.log(hp[3])
    for k in range(K):
        log_a[k] = max(mu[k] - top, log_floor)
    if hp[2] != 0.0:  # exp(log_a - log(sum)) as exp(log_a) / sum: the same to rounding
        for k in range(K):
            ex[k] = math.exp(log_a[k])
        total = pairwise_sum(ex)
        shift = math.log(total)
        for k in range(K):
            log_a[k] -= shift
            ex[k] = ex[k] / total
    else:
        for k in range(K):
            log_a[k] = max(log_a[k] + top, log_floor)
            ex[k] = math.exp(log_a[k])
    for k in range(K):
        inv[k] = 1.0 / ex[k]
    if K <= SMALL_K:
        pending[5] = 1
    else:
        assemble_rows(Z, log_a, L)
    _hold(pending, mats, vecs, A, Ainv, 2, 3)  # ex and inv
    return True


@njit(cache=True)
def _covariance(
    hp: np.ndarray,
    A: np.ndarray,
    Ainv: np.ndarray,
    G: np.ndarray,
    colsum: np.ndarray,
    mats: np.ndarray,
    vecs: np.ndarray,
    ework: np.ndarray,
    rows: np.ndarray,
) -> bool:
    """updates.covariance_update, Eq. (3.9): A from the ridged ``cov(W)``."""
    K = G.shape[0]
    d = hp[6]
    div = max(d - 1.0, 1.0)
    C = mats[0]
    for a in range(K):
        for b in range(K):
            C[a, b] = 0.5 * (
                (G[a, b] - colsum[a] * colsum[b] / d) / div
                + (G[b, a] - colsum[b] * colsum[a] / d) / div
            )
    eps = hp[4] * max(_trace(C) / K, 1e-12)  # updates.ridged
    for a in range(K):
        C[a, a] = C[a, a] + eps
    if hp[5] != 0.0:  # the covariance read as A^{-1}
        if hp[2] != 0.0:
            _normalize_trace(C, float(K * K))
        if not _finite(C):
            return False
        _floored_inverse_pair(C, hp[3], Ainv, A, mats, vecs, ework, rows)
        return True
    if hp[2] != 0.0:
        _normalize_trace(C, 1.0)
    if not _finite(C):
        return False
    _floored_inverse_pair(C, hp[3], A, Ainv, mats, vecs, ework, rows)
    return True


@njit(cache=True)
def _batchopt(
    hp: np.ndarray,
    A: np.ndarray,
    Ainv: np.ndarray,
    G: np.ndarray,
    mats: np.ndarray,
    vecs: np.ndarray,
    ework: np.ndarray,
    rows: np.ndarray,
    pending: np.ndarray,
) -> bool:
    """updates.batchopt_update, Eq. (3.10): ``A = G^{1/2} / tr(G^{1/2})``, ridged and floored
    (``A`` and ``A^{-1}`` held, :func:`_hold`)."""
    K = G.shape[0]
    M = mats[0]
    for a in range(K):
        for b in range(K):
            M[a, b] = 0.5 * (G[a, b] + G[b, a])
    if not _finite(M):
        return False
    Z = mats[1]
    lam = vecs[0]
    S = vecs[1]
    inv = vecs[2]
    sym_eig(M, lam, Z, ework, rows)
    for k in range(K):
        S[k] = math.sqrt(max(lam[k], 0.0))
    total = pairwise_sum(S)
    for k in range(K):
        S[k] = S[k] / total if total > _TINY else 1.0 / K
    eps = hp[4] * max(pairwise_sum(S) / K, 1e-12)
    for k in range(K):
        S[k] = S[k] + eps
    total = pairwise_sum(S)
    top = 0.0
    as_inverse = hp[5] != 0.0
    for k in range(K):
        S[k] = S[k] / total
        if as_inverse:
            S[k] = S[k] * float(K * K)
        top = max(top, S[k])
    for k in range(K):
        S[k] = max(S[k], hp[3] * top)
        inv[k] = 1.0 / S[k]
    if as_inverse:
        _hold(pending, mats, vecs, A, Ainv, 2, 1)  # inv and S
    else:
        _hold(pending, mats, vecs, A, Ainv, 1, 2)
    return True


@njit(cache=True)
def a_update_into(
    kind: int,
    hp: np.ndarray,
    A: np.ndarray,
    Ainv: np.ndarray,
    L: np.ndarray,
    G: np.ndarray,
    colsum: np.ndarray,
    mats: np.ndarray,
    vecs: np.ndarray,
    ework: np.ndarray,
    rows: np.ndarray,
    pending: np.ndarray,
) -> bool:
    """:func:`a_update` with the scratch arrays of :func:`workspace` given.

    ``A`` and ``A^{-1}`` may be held afterwards (module docstring): read them through
    :func:`ainv_column`, or after :func:`settle`.
    """
    if kind == KIND_VONNEUMANN:
        return _vonneumann(hp, A, Ainv, L, G, mats, vecs, ework, rows, pending)
    if kind == KIND_BATCHOPT:
        return _batchopt(hp, A, Ainv, G, mats, vecs, ework, rows, pending)
    settle(pending, mats, vecs, A, Ainv, L)  # the other updates read or write them whole
    if kind == KIND_LOGDET:
        return _logdet(hp, A, Ainv, G, mats, vecs, ework, rows)
    if kind == KIND_COV:
        return _covariance(hp, A, Ainv, G, colsum, mats, vecs, ework, rows)
    return False


def a_update(
    kind: int,
    hp: np.ndarray,
    A: np.ndarray,
    Ainv: np.ndarray,
    L: np.ndarray,
    G: np.ndarray,
    colsum: np.ndarray,
    basis: np.ndarray,
    basis_age: np.ndarray,
) -> bool:
    """The A update ``kind`` from the current ``G`` (and ``colsum``), in place.

    ``basis`` and ``basis_age``: the von Neumann learner's eigenpairs of ``log A`` to
    start from, updated in place (:func:`load_basis`; an empty ``basis`` for none).
    Returns False, with nothing changed, for :data:`KIND_NONE` or a matrix that is
    not finite (the learner then runs the numpy reference).

    Python, calling the compiled steps that the weight pass calls too: a compiled
    ``a_update`` would be one more entry point whose machine code links in every
    update, and compiling it took 3-7 s of CPU on an empty cache for a function only
    the tests call; the five calls cost microseconds beside an update.
    """
    mats, vecs, ework, rows, pending = workspace(G.shape[0])
    load_basis(pending, mats, vecs, basis, basis_age)
    updated = a_update_into(kind, hp, A, Ainv, L, G, colsum, mats, vecs, ework, rows, pending)
    settle(pending, mats, vecs, A, Ainv, L)
    store_basis(pending, mats, vecs, basis, basis_age)
    return bool(updated)
