"""The compiled symmetric eigendecomposition of the OMTL A updates (learners.omtl.eigen).

:func:`~learners.omtl.eigen.sym_eig` must decompose the matrix to rounding, with
ascending eigenvalues and orthonormal eigenvectors, agree with the reference
:func:`learners.omtl.numerics.sym_eigh` (LAPACK) on every function of the matrix
it assembles, and treat decoupled tasks (rows that are zero off the diagonal) as
the reference does: their rows and columns of ``Q diag(f) Q^T`` stay exactly zero.
Matrices: random, graded (eigenvalues over 12 decades), with repeated eigenvalues,
scaled near the ends of the float range, and above the inline size (LAPACK).
"""

from __future__ import annotations

import numpy as np
import pytest

from learners.omtl import eigen
from learners.omtl.numerics import assemble, sym, sym_eigh


def compiled(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lam, Z)`` of :func:`~learners.omtl.eigen.sym_eig` (eigenvectors as rows of Z)."""
    K = M.shape[0]
    lam, Z = np.empty(K), np.empty((K, K))
    eigen.sym_eig(
        np.ascontiguousarray(M), lam, Z, np.empty(2 * K * K + 4 * K), np.empty(K, dtype=np.int64)
    )
    return lam, Z


def assembled(Z: np.ndarray, f: np.ndarray) -> np.ndarray:
    out = np.empty_like(Z)
    eigen.assemble_rows(Z, np.ascontiguousarray(f), out)
    return out


def random_spd(K: int, seed: int, decades: float = 0.0) -> np.ndarray:
    """A random symmetric PD matrix whose eigenvalues span ``decades`` orders of magnitude."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((K, K)))[0]
    lam = 10.0 ** np.linspace(-decades, 0.0, K) if K > 1 else np.ones(1)
    return sym((Q * rng.permutation(lam)) @ Q.T)


def assert_decomposes(M: np.ndarray, lam: np.ndarray, Z: np.ndarray) -> None:
    K = M.shape[0]
    scale = max(float(np.abs(M).max()), 1e-300)
    assert np.all(np.diff(lam) >= 0.0)
    np.testing.assert_allclose(Z @ Z.T, np.eye(K), rtol=0, atol=1e-13 * K)
    np.testing.assert_allclose(Z.T @ (lam[:, None] * Z), M, rtol=0, atol=1e-13 * K * scale)


@pytest.mark.parametrize("K", [1, 2, 3, 4, 10, 17, 32, 33, 50])
def test_random_matrices_decompose_and_agree_with_lapack(K: int) -> None:
    for seed in range(3):
        rng = np.random.default_rng(seed)
        B = rng.standard_normal((K, K + 3))
        M = sym(B @ B.T - 0.5 * K * np.eye(K))  # indefinite too
        lam, Z = compiled(M)
        assert_decomposes(M, lam, Z)
        want_lam, Q = sym_eigh(M)
        np.testing.assert_allclose(lam, want_lam, rtol=0, atol=1e-13 * np.abs(want_lam).max())
        f = np.exp(want_lam / np.abs(want_lam).max())
        np.testing.assert_allclose(
            assembled(Z, np.exp(lam / np.abs(want_lam).max())),
            assemble(Q, f),
            rtol=0,
            atol=1e-13 * f.max(),
        )


@pytest.mark.parametrize("K", [2, 4, 10])
def test_a_graded_matrix_gives_the_references_inverse(K: int) -> None:
    """Eigenvalues over six decades: the inverses agree to rounding times the condition."""
    M = random_spd(K, K, decades=6.0)
    lam, Z = compiled(M)
    want_lam, Q = sym_eigh(M)
    np.testing.assert_allclose(lam, want_lam, rtol=1e-9, atol=0)
    want = assemble(Q, 1.0 / want_lam)
    np.testing.assert_allclose(
        assembled(Z, 1.0 / lam), want, rtol=0, atol=1e-16 * 1e6 * 10 * np.abs(want).max()
    )


def test_repeated_eigenvalues() -> None:
    M = 3.0 * np.eye(6)
    M[:2, :2] += np.array([[1.0, 0.5], [0.5, 1.0]])
    M[4, 5] = M[5, 4] = 1e-3
    lam, Z = compiled(M)
    assert_decomposes(M, lam, Z)
    np.testing.assert_allclose(lam, sym_eigh(M)[0], rtol=1e-15, atol=0)


@pytest.mark.parametrize("scale", [1e-250, 1e-150, 1.0, 1e150, 1e250])
def test_scale_of_the_matrix_does_not_matter(scale: float) -> None:
    M = random_spd(8, 3, decades=2.0)
    lam, Z = compiled(M * scale)
    lam1, Z1 = compiled(M)
    np.testing.assert_allclose(lam / scale, lam1, rtol=0, atol=1e-14 * lam1.max())
    np.testing.assert_allclose(np.abs(Z @ Z1.T), np.eye(8), rtol=0, atol=1e-12)


def test_zero_and_diagonal_matrices() -> None:
    lam, Z = compiled(np.zeros((5, 5)))
    np.testing.assert_array_equal(lam, np.zeros(5))
    np.testing.assert_array_equal(Z, np.eye(5))
    D = np.diag([3.0, -1.0, 2.0, 2.0])
    lam, Z = compiled(D)
    np.testing.assert_array_equal(lam, [-1.0, 2.0, 2.0, 3.0])
    np.testing.assert_array_equal(Z, np.eye(4)[[1, 2, 3, 0]])  # ties in index order
    want_lam, Q = sym_eigh(D)
    np.testing.assert_array_equal(lam, want_lam)
    np.testing.assert_array_equal(Z, Q.T)


@pytest.mark.parametrize("K", [4, 10, 40])
def test_decoupled_tasks_stay_exactly_decoupled(K: int) -> None:
    """Tasks whose row is zero off the diagonal (no weights yet): both decompositions
    leave their rows and columns of every assembled function exactly zero off the diagonal."""
    rng = np.random.default_rng(K)
    coupled = np.sort(rng.choice(K, size=K // 2, replace=False))
    alone = np.setdiff1d(np.arange(K), coupled)
    M = np.diag(rng.uniform(1.0, 2.0, K))
    B = rng.standard_normal((coupled.size, coupled.size))
    M[np.ix_(coupled, coupled)] += B @ B.T
    M = sym(M)
    lam, Z = compiled(M)
    assert_decomposes(M, lam, Z)
    want_lam, Q = sym_eigh(M)
    np.testing.assert_allclose(lam, want_lam, rtol=1e-13, atol=0)
    for f in (1.0 / lam, np.exp(-lam), np.log(lam)):
        for got in (assembled(Z, f), assemble(Q, f)):
            off = got.copy()
            np.fill_diagonal(off, 0.0)
            assert np.all(off[alone] == 0.0) and np.all(off[:, alone] == 0.0)
        np.testing.assert_allclose(
            assembled(Z, f), assemble(Q, f), rtol=0, atol=1e-13 * np.abs(f).max()
        )


def test_reference_decomposition_of_a_matrix_without_decoupled_tasks_is_lapacks() -> None:
    M = random_spd(7, 1)
    lam, Q = sym_eigh(M)
    ref_lam, ref_Q = np.linalg.eigh(M)
    np.testing.assert_array_equal(lam, ref_lam)
    np.testing.assert_array_equal(np.abs(Q), np.abs(ref_Q))
