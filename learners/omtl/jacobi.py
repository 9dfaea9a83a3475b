"""A symmetric eigendecomposition started from the eigenvectors of a nearby matrix.

The von Neumann update (saha2011 Eq. 3.8, docs/algorithms.md Sec. 2.8) decomposes
``M = log A - eta G`` at every mistake, and consecutive matrices differ by one
step of ``eta G / tr(G)``, a small part of ``M``. In the eigenvectors ``Z`` of
the previous matrix (rows), ``B = Z M Z^T`` is then nearly diagonal, and the
cyclic Jacobi method (Golub & Van Loan, *Matrix Computations*, Algorithm 8.5.3,
with Rutishauser's update formulas), which converges quadratically once the
off-diagonal part is small, finishes it in one or two sweeps of plane rotations
(2.4 sweeps on average, the last one only checking, on the K = 10 benchmark
stream): about 2.5 us per decomposition there, against 4.1 us for the
Householder and QL decomposition from scratch of :mod:`learners.omtl.eigen`.

A sweep skips every pair whose entry is at most ``eps ||M||_F`` (the size of the
rounding in forming ``B``), and the method stops after a sweep without a
rotation, with the backward error of a decomposition from scratch.

**Keeping the basis orthonormal.** The rotations' rounding moves a basis carried
from update to update away from orthonormal: the rows' lengths drift by about a
unit of rounding per update (``c^2 + s^2`` is not exactly 1), and the angles
between rows by a random walk; ``log A = Z^T diag(log a) Z`` turns that into
errors of its large entries. So each warm start ends by dividing the rows by
their lengths, and, when the caller asks (every fourth warm start in
:mod:`learners.omtl.a_kernels`), by the symmetric correction
``Z <- Z - (Z Z^T - I) Z / 2``, which takes a departure ``E`` from orthonormal to
``O(E^2)``. Over the 5,582 updates of that stream, without a decomposition from
scratch between them, the basis stays orthonormal to 1.3e-15 and
``Z^T diag(lam) Z`` equals M to 3.4e-15 of its largest entry (from scratch:
3.6e-15 and 5.6e-15); without the corrections, 3.1e-14 and 1.2e-13.

**From held eigenpairs** (:func:`warm_eig_step`). The von Neumann update's ``log A``
is itself ``Z^T diag(d) Z`` in the previous eigenvectors, so in that basis
``B = diag(d) - eta Z G Z^T`` without assembling ``log A`` or ``M``: one product
``Z G Z^T`` (0.54 us at K = 10, its entries summed four at a time) replaces the
assembly of ``log A`` (0.35 us) and the product ``Z M Z^T``, and the diagonal part is
exact instead of rounded twice. On the 200,000 events of the K = 10 d = 100 benchmark
stream (52,486 updates, every one after the first a warm start) the basis ends
orthonormal to 6.7e-16; kernel and numpy reference states differ on the conformance
streams by at most 2.8e-14 relative (7.1e-14 when ``B`` was formed from the assembled
``M``).

**Decoupled tasks.** An exact zero off the diagonal of ``B`` stays an exact zero
under rotations of other pairs, and the corrections leave a unit row
``e_j`` and the zeros of the other rows in column j as they are, so a task that is
decoupled in ``M`` and in the basis stays exactly decoupled (docs/algorithms.md
Sec. 2.8, "Decoupled tasks"); in a step from held eigenpairs, a zero row and column
of G and a unit row ``e_j`` of the basis give exact zeros in ``Z G Z^T``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.kernels import ROW_HELPER, ROW_KERNEL
from learners.omtl.eigen import sort_ascending

__all__ = ["MAX_SWEEPS", "warm_eig_step"]

#: Sweeps allowed before :func:`warm_eig_step` gives up (the caller then decomposes from
#: scratch); a warm start needs one to three.
MAX_SWEEPS = 12

_EPS = 2.0**-52


@njit(**ROW_HELPER)
def _row_products(
    X: np.ndarray, Y: np.ndarray, scale: float, out: np.ndarray, symmetric: bool
) -> None:
    """``out[a, b] = scale <X[a], Y[b]>`` (``X Y^T``), each sum in index order; with
    ``symmetric`` only for ``b >= a``, each entry copied to ``out[b, a]`` (exactly
    symmetric by construction). Four entries of a row are summed side by side: four
    independent chains of additions, which the processor overlaps (at K = 10 a product
    takes 0.26 instead of 0.44 us one entry at a time)."""
    n = X.shape[0]
    for a in range(n):
        xa = X[a]
        b = a if symmetric else 0
        while b + 4 <= n:
            y0 = Y[b]
            y1 = Y[b + 1]
            y2 = Y[b + 2]
            y3 = Y[b + 3]
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            for k in range(n):
                x = xa[k]
                s0 += x * y0[k]
                s1 += x * y1[k]
                s2 += x * y2[k]
                s3 += x * y3[k]
            _put(out, a, b, scale * s0, symmetric)
            _put(out, a, b + 1, scale * s1, symmetric)
            _put(out, a, b + 2, scale * s2, symmetric)
            _put(out, a, b + 3, scale * s3, symmetric)
            b += 4
        while b < n:
            yb = Y[b]
            s = 0.0
            for k in range(n):
                s += xa[k] * yb[k]
            _put(out, a, b, scale * s, symmetric)
            b += 1


@njit(cache=True, inline="always")
def _put(out: np.ndarray, a: int, b: int, value: float, symmetric: bool) -> None:
    out[a, b] = value
    if symmetric:
        out[b, a] = value


@njit(**ROW_HELPER)
def _into_basis(M: np.ndarray, Z: np.ndarray, B: np.ndarray, T: np.ndarray) -> None:
    """``B = Z M^T Z^T`` above the diagonal, mirrored below (exactly symmetric), through
    ``T[a, b] = <Z[a], M[b]>``; for an exactly symmetric M, ``Z M Z^T``."""
    _row_products(Z, M, 1.0, T, False)
    _row_products(T, Z, 1.0, B, True)


@njit(**ROW_HELPER)
def _frobenius(M: np.ndarray) -> float:
    n = M.shape[0]
    norm2 = 0.0
    for a in range(n):
        for b in range(n):
            norm2 += M[a, b] * M[a, b]
    return math.sqrt(norm2)


@njit(**ROW_HELPER)
def _rotate(B: np.ndarray, Z: np.ndarray, p: int, q: int) -> None:
    """One Jacobi rotation zeroing ``B[p, q]``: ``B <- J^T B J``, rows p, q of ``Z`` turned along.

    The angle from ``theta = (B_qq - B_pp) / (2 B_pq)`` and ``t = tan`` of the smaller
    root; rows p and q of B change by Rutishauser's formulas (``tau = s / (1 + c)``),
    their 2 x 2 block is set to its exact result, and columns p and q are copied from
    the rows (B stays exactly symmetric).
    """
    n = B.shape[0]
    apq = B[p, q]
    theta = (B[q, q] - B[p, p]) / (2.0 * apq)
    t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
    if theta < 0.0:
        t = -t
    c = 1.0 / math.sqrt(t * t + 1.0)
    s = t * c
    tau = s / (1.0 + c)
    app = B[p, p] - t * apq
    aqq = B[q, q] + t * apq
    bp = B[p]
    bq = B[q]
    for r in range(n):
        g = bp[r]
        h = bq[r]
        bp[r] = g - s * (h + g * tau)
        bq[r] = h + s * (g - h * tau)
    bp[p] = app
    bq[q] = aqq
    bp[q] = 0.0
    bq[p] = 0.0
    for r in range(n):
        B[r, p] = bp[r]
        B[r, q] = bq[r]
    zp = Z[p]
    zq = Z[q]
    for k in range(n):
        a = zp[k]
        b = zq[k]
        zp[k] = c * a - s * b
        zq[k] = s * a + c * b


@njit(**ROW_HELPER)
def _orthonormalise_rows(Z: np.ndarray, S: np.ndarray) -> None:
    """One symmetric (Lowdin) correction ``Z <- Z - (Z Z^T - I) Z / 2`` of a basis that is
    orthonormal to a few units of rounding: the departure ``E = Z Z^T - I`` goes to
    ``O(E^2)``. ``S``: (K, K) scratch. The Gram matrix's entries are independent sums
    and the correction runs along rows; a row is corrected from the rows as they are
    then (those before it already corrected), the same to ``O(E^2)``."""
    n = Z.shape[0]
    _row_products(Z, Z, 0.5, S, True)
    for a in range(n):
        S[a, a] -= 0.5
    for a in range(n):
        za = Z[a]
        sa = S[a]
        for b in range(n):
            e = sa[b]
            if e != 0.0:
                zb = Z[b]
                for k in range(n):
                    za[k] -= e * zb[k]


@njit(**ROW_HELPER)
def _normalise_rows(Z: np.ndarray) -> None:
    """Each row of ``Z`` divided by its length."""
    n = Z.shape[0]
    for a in range(n):
        za = Z[a]
        norm2 = 0.0
        for k in range(n):
            norm2 += za[k] * za[k]
        inv = 1.0 / math.sqrt(norm2)
        for k in range(n):
            za[k] *= inv


@njit(**ROW_KERNEL)
def warm_eig_step(
    d: np.ndarray,
    G: np.ndarray,
    step: float,
    Z: np.ndarray,
    lam: np.ndarray,
    work: np.ndarray,
    rows: np.ndarray,
    orthonormalise: bool,
) -> int:
    """Eigenpairs of ``M = Z^T diag(d) Z - step sym(G)`` from the orthonormal basis ``Z``:
    a matrix held as the basis and the eigenvalues ``d`` of its first term, moved by a
    step along ``G`` (with ``d = 0`` and ``step = -1``, of ``sym(G)`` itself).

    In the basis, ``B = diag(d) - step Z G Z^T``: the first term is diagonal there
    exactly, so neither it nor ``M`` is ever assembled (the von Neumann update's
    ``log A - eta G``, docs/algorithms.md Sec. 2.8; ``Z G Z^T`` sums as ``Z G^T Z^T``
    above its diagonal and mirrors it, which is ``Z sym(G) Z^T`` to rounding).

    Returns 1 when the sweeps converged: ``lam`` holds the eigenvalues in ascending
    order (ties in index order) and row ``j`` of ``Z`` the unit eigenvector of
    ``lam[j]``, as :func:`learners.omtl.eigen.sym_eig` returns them, the rows
    renormalised, or with ``orthonormalise`` corrected to orthonormal (module
    docstring); 0 after :data:`MAX_SWEEPS` sweeps (``Z`` and ``lam`` undefined:
    decompose from scratch); -1, with ``Z`` unchanged, when ``B`` is not finite.
    ``work``: float scratch of ``2 K^2`` entries at least; ``rows``: int scratch of K.
    """
    n = G.shape[0]
    B = work[: n * n].reshape((n, n))
    T = work[n * n : 2 * n * n].reshape((n, n))
    _into_basis(G, Z, B, T)
    for a in range(n):
        ba = B[a]
        for b in range(n):
            ba[b] = -step * ba[b]
        ba[a] += d[a]
    norm = _frobenius(B)
    if not norm < math.inf:
        return -1
    return 1 if _sweeps(B, Z, lam, _EPS * norm, work, rows, orthonormalise) else 0


@njit(**ROW_HELPER)
def _sweeps(
    B: np.ndarray,
    Z: np.ndarray,
    lam: np.ndarray,
    tol: float,
    work: np.ndarray,
    rows: np.ndarray,
    orthonormalise: bool,
) -> bool:
    """Cyclic Jacobi sweeps on ``B`` (``Z M Z^T``), each rotation turning ``Z`` along, until
    a sweep finds no entry above ``tol``; then the finish of :func:`warm_eig_step`."""
    n = B.shape[0]
    T = work[n * n : 2 * n * n].reshape((n, n))
    for _ in range(MAX_SWEEPS):
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                if abs(B[p, q]) > tol:
                    _rotate(B, Z, p, q)
                    rotated = True
        if not rotated:
            for a in range(n):
                lam[a] = B[a, a]
            if orthonormalise:
                _orthonormalise_rows(Z, T)
            else:
                _normalise_rows(Z)
            sort_ascending(lam, Z, work, rows)
            return True
    return False
