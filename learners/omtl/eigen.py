"""Compiled symmetric eigendecomposition for the small interaction matrices of OMTL.

The A updates of saha2011 (Eqs. 3.7-3.10, docs/algorithms.md Sec. 2.3) each
diagonalise one symmetric ``K x K`` matrix. For a small K, LAPACK's ``dsyevd``
spends most of its time in the calling overhead of its many level-1/2 BLAS
calls (about 6 us at K = 10, for some 10^4 flops); :func:`sym_eig` runs the same
classical algorithm inline instead: Householder reduction to tridiagonal form
(Golub & Van Loan, *Matrix Computations*, Algorithm 8.3.1), then the implicit QL
iteration with Wilkinson shifts (EISPACK's ``tql2``, Wilkinson & Reinsch,
*Handbook for Automatic Computation II*, 1971; the ``dsytrd`` + ``dsteqr`` pair
of LAPACK is the same method). Both
are backward stable: the computed ``Q diag(lam) Q^T`` is the matrix to a few
units of rounding of its largest eigenvalue, and ``Q`` is orthogonal to
rounding, as with LAPACK; the two differ from each other by that rounding
(docs/algorithms.md Sec. 2.8).

The eigenvectors are kept as the *rows* of ``Z`` (``Z = Q^T``), so that the plane
rotations of the QL sweeps and the products ``Q diag(f) Q^T`` run along
contiguous memory. The matrix is scaled by a power of two (exact) so that its
largest entry lies in [1, 2): the rotations then use ``sqrt(p^2 + e^2)`` without
overflow or harmful underflow (a ``hypot`` guards the rare tiny pairs).

Above :data:`SMALL_K`, or if the QL iteration does not converge (which the
iteration bound makes a theoretical case), :func:`sym_eig` calls LAPACK through
:func:`numpy.linalg.eigh`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.kernels import ROW_HELPER

__all__ = ["SMALL_K", "assemble_rows", "sort_ascending", "sym_eig"]

#: The largest K diagonalised inline; LAPACK above (where its blocked code pays off).
SMALL_K = 32

_EPS = 2.0**-52
#: Squares outside [_LOW, _HIGH] take the ``hypot`` path.
_LOW = 1e-280
_HIGH = 1e280
#: QL iterations allowed per eigenvalue (LAPACK's dsteqr allows 30).
_MAX_ITER = 30


@njit(**ROW_HELPER)
def _rot_len(p: float, q: float) -> float:
    """``sqrt(p^2 + q^2)``, through ``hypot`` only when the squares could under/overflow."""
    r2 = p * p + q * q
    if _LOW < r2 < _HIGH:
        return math.sqrt(r2)
    return math.hypot(p, q)


@njit(**ROW_HELPER)
def _tridiagonalize(
    V: np.ndarray, d: np.ndarray, e: np.ndarray, Z: np.ndarray, v: np.ndarray, w: np.ndarray
) -> None:
    """Householder reduction of the symmetric ``V`` (destroyed) to tridiagonal ``T``.

    ``d`` gets the diagonal of T, ``e[1:]`` its subdiagonal (``e[0] = 0``) and ``Z`` the
    orthogonal matrix with ``Z V Z^T = T``. Step k reflects row k right of the
    diagonal onto its first entry (``alpha = -sign(x_0) ||x||``, no cancellation) and
    updates the trailing block by the symmetric rank-two term ``v w^T + w v^T``
    (Golub & Van Loan, *Matrix Computations*, Algorithm 8.3.1), all along rows; ``v``
    and ``w`` are (K,) scratch.
    """
    n = V.shape[0]
    for i in range(n):
        for j in range(n):
            Z[i, j] = 0.0
        Z[i, i] = 1.0
    e[0] = 0.0
    for k in range(n - 2):
        m = n - k - 1
        d[k] = V[k, k]  # final: later steps change only the trailing block
        x0 = V[k, k + 1]
        tail = 0.0
        for j in range(k + 2, n):
            tail += V[k, j] * V[k, j]
        if tail == 0.0:
            e[k + 1] = x0
            continue
        norm = math.sqrt(x0 * x0 + tail)
        alpha = -norm if x0 > 0.0 else norm
        e[k + 1] = alpha
        v[0] = x0 - alpha
        for j in range(1, m):
            v[j] = V[k, k + 1 + j]
        beta = 1.0 / (norm * (norm + abs(x0)))  # 2 / (v.v)
        for i in range(m):
            w[i] = 0.0
        for j in range(m):  # w = beta B v, by rows of B (B symmetric)
            bj = V[k + 1 + j]
            vj = v[j] * beta
            for i in range(m):
                w[i] += bj[k + 1 + i] * vj
        pv = 0.0
        for i in range(m):
            pv += w[i] * v[i]
        half = 0.5 * beta * pv
        for i in range(m):
            w[i] -= half * v[i]
        for i in range(m):  # B -= v w^T + w v^T
            bi = V[k + 1 + i]
            vi = v[i]
            wi = w[i]
            for j in range(m):
                bi[k + 1 + j] -= vi * w[j] + wi * v[j]
        # Z[k+1:, :] -= beta v (v^T Z[k+1:, :])
        y = V[k]  # row k of V is no longer needed: scratch for v^T Z
        for j in range(n):
            y[j] = 0.0
        for i in range(m):
            zi = Z[k + 1 + i]
            vi = v[i]
            for j in range(n):
                y[j] += vi * zi[j]
        for i in range(m):
            zi = Z[k + 1 + i]
            bvi = beta * v[i]
            for j in range(n):
                zi[j] -= bvi * y[j]
    for i in range(max(n - 2, 0), n):
        d[i] = V[i, i]
    if n >= 2:
        e[n - 1] = V[n - 2, n - 1]


@njit(**ROW_HELPER)
def _ql(d: np.ndarray, e: np.ndarray, Z: np.ndarray) -> bool:
    """EISPACK ``tql2``: diagonalise the tridiagonal ``(d, e[1:])``, rotating the rows of ``Z``.

    On return ``d`` holds the eigenvalues (unsorted) and row ``j`` of ``Z`` the
    eigenvector of ``d[j]``. False if an eigenvalue needed more than
    :data:`_MAX_ITER` iterations.
    """
    n = d.shape[0]
    for i in range(1, n):
        e[i - 1] = e[i]
    e[n - 1] = 0.0
    f = 0.0
    tst1 = 0.0
    for lo in range(n):
        tst1 = max(tst1, abs(d[lo]) + abs(e[lo]))
        m = lo
        while m < n - 1:
            if abs(e[m]) <= _EPS * tst1:
                break
            m += 1
        if m > lo:
            it = 0
            while True:
                it += 1
                if it > _MAX_ITER:
                    return False
                g = d[lo]
                p = (d[lo + 1] - g) / (2.0 * e[lo])
                r = _rot_len(p, 1.0)
                if p < 0.0:
                    r = -r
                d[lo] = e[lo] / (p + r)
                d[lo + 1] = e[lo] * (p + r)
                dl1 = d[lo + 1]
                h = g - d[lo]
                for i in range(lo + 2, n):
                    d[i] -= h
                f += h
                p = d[m]
                c = 1.0
                c2 = c
                c3 = c
                el1 = e[lo + 1]
                s = 0.0
                s2 = 0.0
                for i in range(m - 1, lo - 1, -1):
                    c3 = c2
                    c2 = c
                    s2 = s
                    g = c * e[i]
                    h = c * p
                    r = _rot_len(p, e[i])
                    e[i + 1] = s * r
                    inv = 1.0 / r  # one division on the chain, not two
                    s = e[i] * inv
                    c = p * inv
                    p = c * d[i] - s * g
                    d[i + 1] = h + s * (c * g + s * d[i])
                    zi = Z[i]
                    zn = Z[i + 1]
                    for k in range(n):
                        zk = zn[k]
                        zn[k] = s * zi[k] + c * zk
                        zi[k] = c * zi[k] - s * zk
                p = -s * s2 * c3 * el1 * e[lo] / dl1
                e[lo] = s * p
                d[lo] = c * p
                if not abs(e[lo]) > _EPS * tst1:
                    break
        d[lo] = d[lo] + f
        e[lo] = 0.0
    return True


@njit(**ROW_HELPER)
def _pow2_scale(top: float) -> float:
    """The power of two (exact to multiply by) that takes ``top > 0`` into [1, 2); 0 when
    it is not a finite float."""
    _, exponent = math.frexp(top)  # top = f 2^exponent, f in [0.5, 1)
    scale = math.ldexp(1.0, 1 - exponent)
    return scale if 0.0 < scale < math.inf and top * scale < math.inf else 0.0


@njit(**ROW_HELPER)
def _inline_eig(V: np.ndarray, lam: np.ndarray, Z: np.ndarray, work: np.ndarray) -> bool:
    """Eigenpairs of the symmetric ``V`` (destroyed) inline: eigenvalues (unsorted) into
    ``lam``, eigenvector ``r`` into row ``r`` of ``Z``. False (``lam`` and ``Z`` undefined)
    when the matrix cannot be scaled into range or the QL iteration does not converge.
    ``work``: float scratch of 3 m entries."""
    m = V.shape[0]
    top = 0.0
    for a in range(m):
        for b in range(m):
            top = max(top, abs(V[a, b]))
    if m > SMALL_K or not top > 0.0:
        return False
    scale = _pow2_scale(top)
    if scale == 0.0:
        return False
    for a in range(m):
        for b in range(m):
            V[a, b] *= scale
    e = work[:m]
    _tridiagonalize(V, lam, e, Z, work[m : 2 * m], work[2 * m : 3 * m])
    if not _ql(lam, e, Z):
        return False
    inv = 1.0 / scale  # a power of two: exact
    for r in range(m):
        lam[r] *= inv
    return True


@njit(cache=True)
def _lapack_eig(V: np.ndarray, lam: np.ndarray, Z: np.ndarray) -> None:
    """``lam`` and the rows of ``Z`` from LAPACK's ``dsyevd`` (numpy.linalg.eigh) of ``V``."""
    w, Q = np.linalg.eigh(V)
    m = V.shape[0]
    for r in range(m):
        lam[r] = w[r]
        for k in range(m):
            Z[r, k] = Q[k, r]


@njit(cache=True)
def _block_eig(M: np.ndarray, rows: np.ndarray, m: int, lam: np.ndarray, work: np.ndarray) -> None:
    """Eigenpairs of the block ``M[rows[:m]][:, rows[:m]]``: eigenvalues (unsorted) into
    ``lam[:m]``, eigenvector ``r`` into ``work[m*m + r*m : m*m + (r+1)*m]`` (block coordinates)."""
    V = work[: m * m].reshape((m, m))
    Z = work[m * m : 2 * m * m].reshape((m, m))
    for a in range(m):
        for b in range(m):
            V[a, b] = M[rows[a], rows[b]]
    # lam is work[2 m^2 + m : 2 m^2 + 2 m] (sym_eig's block path); the scratch lies after it
    if _inline_eig(V, lam[:m], Z, work[2 * m * m + 2 * m : 2 * m * m + 5 * m]):
        return
    for a in range(m):
        for b in range(m):
            V[a, b] = M[rows[a], rows[b]]
    _lapack_eig(V, lam, Z)


@njit(**ROW_HELPER)
def _coupled_rows(M: np.ndarray, rows: np.ndarray) -> int:
    """The tasks whose row of ``M`` is non-zero off the diagonal, into ``rows``; their number."""
    n = M.shape[0]
    m = 0
    for j in range(n):
        for k in range(n):
            if k != j and M[j, k] != 0.0:
                rows[m] = j
                m += 1
                break
    return m


@njit(**ROW_HELPER)
def sort_ascending(lam: np.ndarray, Z: np.ndarray, work: np.ndarray, rows: np.ndarray) -> None:
    """Sort the eigenpairs by ascending eigenvalue, ties in index order (a stable
    insertion sort of indices, then one permutation through ``work``)."""
    n = lam.shape[0]
    for i in range(n):
        rows[i] = i
    for i in range(1, n):
        r = rows[i]
        j = i
        while j > 0 and lam[r] < lam[rows[j - 1]]:
            rows[j] = rows[j - 1]
            j -= 1
        rows[j] = r
    for i in range(n):
        if rows[i] != i:
            break
    else:
        return  # already in order
    for i in range(n):
        work[i] = lam[rows[i]]
        for k in range(n):
            work[n + i * n + k] = Z[rows[i], k]
    for i in range(n):
        lam[i] = work[i]
        for k in range(n):
            Z[i, k] = work[n + i * n + k]


@njit(cache=True)
def sym_eig(
    M: np.ndarray, lam: np.ndarray, Z: np.ndarray, work: np.ndarray, rows: np.ndarray
) -> None:
    """Eigendecomposition of the finite, exactly symmetric ``M`` (K, K), into ``lam`` and ``Z``.

    ``lam`` (K,) gets the eigenvalues in ascending order (ties in index order) and
    row ``j`` of ``Z`` (K, K) the unit eigenvector of ``lam[j]`` (``M = Z^T diag(lam) Z``
    to rounding), as :func:`learners.omtl.numerics.sym_eigh` returns them: a task
    whose row is zero off the diagonal is decoupled, its own eigenvector with
    eigenvalue ``M[j, j]``, and only the block of the coupled tasks is
    diagonalised. ``work`` is float scratch of ``2 K^2 + 4 K`` entries, ``rows``
    int scratch of K. ``M`` is not modified.

    When every task is coupled (the usual case) the matrix is decomposed straight
    into ``lam`` and ``Z``, without the block's copies.
    """
    n = M.shape[0]
    m = _coupled_rows(M, rows)
    if m == n:
        V = work[: n * n].reshape((n, n))
        V[:, :] = M
        if not _inline_eig(V, lam, Z, work[n * n : n * n + 3 * n]):
            V[:, :] = M
            _lapack_eig(V, lam, Z)
        sort_ascending(lam, Z, work, rows)
        return
    for j in range(n):
        lam[j] = M[j, j]
        for k in range(n):
            Z[j, k] = 0.0
        Z[j, j] = 1.0
    if m > 0:
        sub = work[2 * m * m + m :]
        _block_eig(M, rows, m, sub, work)
        for r in range(m):
            j = rows[r]
            lam[j] = sub[r]
            Z[j, j] = 0.0
            for c in range(m):
                Z[j, rows[c]] = work[m * m + r * m + c]
    sort_ascending(lam, Z, work, rows)


@njit(cache=True)
def assemble_rows(Z: np.ndarray, f: np.ndarray, out: np.ndarray) -> None:
    """``out = sym(Z^T diag(f) Z)`` (numerics.assemble with ``Q = Z^T``), exactly symmetric.

    Entry ``(a, b)`` sums ``(Z[k, a] f[k]) Z[k, b]`` over the eigenvectors k in
    order, as ``(Q * f) @ Q.T`` multiplies; the loop over ``b`` is the inner one,
    so the K^2 running sums advance side by side along contiguous rows. Above
    :data:`SMALL_K`, a BLAS product.
    """
    n = Z.shape[0]
    if n > SMALL_K:  # a BLAS product pays off
        T = np.empty((n, n))
        for k in range(n):
            for a in range(n):
                T[k, a] = Z[k, a] * f[k]
        out[:, :] = np.dot(Z.T, T)
        for a in range(n):
            for b in range(a + 1, n):
                s = 0.5 * (out[a, b] + out[b, a])
                out[a, b] = s
                out[b, a] = s
        return
    for a in range(n):
        for b in range(n):
            out[a, b] = 0.0
    for k in range(n):
        fk = f[k]
        zk = Z[k]
        for a in range(n):
            za = zk[a] * fk
            oa = out[a]
            for b in range(n):
                oa[b] += za * zk[b]
    for a in range(n):
        for b in range(a + 1, n):
            s = 0.5 * (out[a, b] + out[b, a])
            out[a, b] = s
            out[b, a] = s
