"""Spectral helpers for symmetric matrices, with eigenvalue floors.

The interaction matrices of saha2011 (Sec. 3) are symmetric positive
(semi)definite ``K x K`` matrices. Every matrix function here goes through one
symmetric eigendecomposition ``M = Q diag(lam) Q^T`` (LAPACK ``dsyevd`` called
directly through :mod:`scipy.linalg.lapack` by :func:`sym_eigh`: the routine
:func:`numpy.linalg.eigh` runs, without its per-call checks, which cost as much as
the decomposition itself for small K; a decoupled task, zero off the diagonal, is
its own eigenvector and stays out of it), applies the scalar function to the
eigenvalues and reassembles ``Q diag(f(lam)) Q^T``, symmetrised so that the result
is exactly symmetric. This is the route saha2011 Sec. 3.3 recommends; the eigenvalue
floors are what keeps it stable (the paper reports its spectral von Neumann
update as unstable, Sec. 5.4).

A *relative floor* ``floor`` clips eigenvalues at ``floor * max(lam)``, so the
condition number of a floored matrix never exceeds ``1 / floor``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

__all__ = [
    "TINY",
    "assemble",
    "floored_eigh",
    "normalize_trace",
    "spd_inverse_pair",
    "sym",
    "sym_eigh",
    "sym_expm",
    "sym_logm",
    "sym_sqrtm_psd",
]

#: Absolute lower bound for a scale (a trace or a largest eigenvalue) treated as non-zero.
TINY = 1e-300


def sym(M: np.ndarray) -> np.ndarray:
    """``(M + M^T) / 2`` — saha2011 Eq. (3.6)'s ``sym``. Shape (K, K) -> (K, K)."""
    return 0.5 * (M + M.T)


def sym_eigh(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lam, Q)`` of the exactly symmetric float64 (K, K) ``M``: eigenvalues ascending
    (ties in index order), orthonormal eigenvectors as columns.

    A task whose row of a finite M is zero off the diagonal is decoupled: it is its
    own eigenvector ``e_j`` with eigenvalue ``M[j, j]``, and only the block of the
    coupled tasks goes to LAPACK ``dsyevd`` (from its lower triangle, as
    :func:`numpy.linalg.eigh`). So ``Q diag(f(lam)) Q^T`` keeps a decoupled task's
    row and column exactly zero off the diagonal, instead of the rounding noise a
    decomposition of the whole matrix leaves there (docs/algorithms.md Sec. 2.8).
    NaN entries give NaN results, as with numpy; raises
    :class:`numpy.linalg.LinAlgError` when LAPACK reports no convergence."""
    K = M.shape[0]
    coupled = np.flatnonzero(((M != 0.0) & ~np.eye(K, dtype=bool)).any(axis=1))
    if coupled.size == K or not np.isfinite(M).all():
        return _dsyevd(M)
    lam = np.diag(M).copy()
    Q = np.eye(K)
    if coupled.size:
        block = np.ix_(coupled, coupled)
        lam[coupled], Q[block] = _dsyevd(np.ascontiguousarray(M[block]))
    order = np.argsort(lam, kind="stable")
    return lam[order], Q[:, order]


def _dsyevd(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK ``dsyevd`` of the symmetric ``M`` (lower triangle): ``(lam, Q)``, ascending."""
    lam, Q, info = lapack.dsyevd(M, compute_v=1, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"eigenvalues did not converge (dsyevd info {info})")
    return lam, Q


def assemble(Q: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """``Q diag(lam) Q^T``, exactly symmetric. ``Q`` (K, K) orthogonal, ``lam`` (K,)."""
    return sym((Q * lam) @ Q.T)


def floored_eigh(M: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Eigendecomposition of a symmetric PSD matrix with a relative eigenvalue floor.

    Parameters
    ----------
    M : ndarray, shape (K, K)
        Symmetric positive semidefinite (rounding may make tiny eigenvalues negative).
    floor : float
        Relative floor in (0, 1): eigenvalues are clipped at ``floor * max(lam)``.

    Returns
    -------
    lam : ndarray, shape (K,)
        Floored eigenvalues, all > 0 (ascending).
    Q : ndarray, shape (K, K)
        Orthonormal eigenvectors (columns).
    """
    lam, Q = sym_eigh(sym(M))
    top = max(float(lam[-1]), TINY)
    return np.maximum(lam, floor * top), Q


def spd_inverse_pair(M: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """A floored copy of a symmetric PSD matrix and its inverse, from one ``eigh``.

    Returns ``(M_floored, M_floored^{-1})``, both (K, K), symmetric positive
    definite, with ``M_floored @ M_floored^{-1} = I`` to rounding. When no
    eigenvalue is below the floor, ``M_floored`` is ``M`` itself: its exact zeros
    (tasks that share no features) stay exact, which a reassembly
    ``Q diag(lam) Q^T`` would blur into rounding residues (docs/algorithms.md Sec. 2.8).
    """
    S = sym(M)
    lam, Q = sym_eigh(S)
    bound = floor * max(float(lam[-1]), TINY)
    if lam[0] >= bound:
        return S, assemble(Q, 1.0 / lam)
    lam = np.maximum(lam, bound)
    return assemble(Q, lam), assemble(Q, 1.0 / lam)


def sym_logm(A: np.ndarray, floor: float) -> np.ndarray:
    """Matrix logarithm of a symmetric positive definite (K, K) matrix (eigenvalues floored)."""
    lam, Q = floored_eigh(A, floor)
    return assemble(Q, np.log(lam))


def sym_expm(M: np.ndarray) -> np.ndarray:
    """Matrix exponential of a symmetric (K, K) matrix; overflows only where ``exp`` does."""
    lam, Q = sym_eigh(sym(M))
    return assemble(Q, np.exp(lam))


def sym_sqrtm_psd(G: np.ndarray) -> np.ndarray:
    """Principal square root of a symmetric PSD (K, K) matrix; negative rounding clipped to 0."""
    lam, Q = sym_eigh(sym(G))
    return assemble(Q, np.sqrt(np.maximum(lam, 0.0)))


def normalize_trace(M: np.ndarray, target: float = 1.0) -> tuple[np.ndarray, float]:
    """Scale a (K, K) matrix to trace ``target``; returns ``(scaled, factor)``.

    ``factor = target / tr(M)``. A matrix whose trace is not positive is returned
    unchanged with factor 1.
    """
    tr = float(np.trace(M))
    if not tr > TINY:
        return M, 1.0
    factor = target / tr
    return M * factor, factor
