"""The OMTL A updates' eigendecomposition: LAPACK ``dsyevd`` called directly.

:func:`learners.omtl.numerics.sym_eigh` replaces :func:`numpy.linalg.eigh` (the
same LAPACK routine, without its per-call checks); it must give a decomposition
of the matrix to rounding, with ascending eigenvalues and orthonormal vectors,
agree with numpy to 1e-12, and treat NaN entries as numpy does (NaN out, no error).
"""

from __future__ import annotations

import numpy as np
import pytest

from learners.omtl.numerics import sym, sym_eigh


@pytest.mark.parametrize("k", [1, 2, 10, 57])
def test_sym_eigh_decomposes_and_agrees_with_numpy(k: int) -> None:
    rng = np.random.default_rng(k)
    B = rng.normal(size=(k, k))
    M = sym(B @ B.T + 0.1 * np.eye(k))
    lam, Q = sym_eigh(M)
    assert np.all(np.diff(lam) >= 0.0)
    assert np.allclose(Q.T @ Q, np.eye(k), atol=1e-12)
    assert np.allclose((Q * lam) @ Q.T, M, rtol=0.0, atol=1e-12 * np.abs(M).max())
    ref_lam, ref_Q = np.linalg.eigh(M)
    assert np.allclose(lam, ref_lam, rtol=1e-12, atol=1e-12 * ref_lam[-1])
    # eigenvectors agree up to sign (distinct eigenvalues of a random matrix)
    signs = np.sign(np.sum(Q * ref_Q, axis=0))
    assert np.allclose(Q * signs, ref_Q, atol=1e-9)


def test_sym_eigh_gives_nan_for_nan_as_numpy_does() -> None:
    M = np.eye(4)
    M[1, 2] = M[2, 1] = np.nan
    lam, Q = sym_eigh(M)
    ref_lam, ref_Q = np.linalg.eigh(M)
    assert np.array_equal(np.isnan(lam), np.isnan(ref_lam))
    assert np.isnan(lam).sum() == 2
    assert np.array_equal(np.isnan(Q), np.isnan(ref_Q))
