"""The A updates of saha2011 Eqs. (3.7)-(3.10) against direct dense formulas, and their stability."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as la
from hypothesis import given, settings
from hypothesis import strategies as st

from learners.omtl.numerics import normalize_trace, spd_inverse_pair, sym_expm, sym_logm
from learners.omtl.updates import (
    batchopt_update,
    covariance_from_gram,
    covariance_update,
    gram_after_batch,
    gram_after_rank_one,
    logdet_update,
    vonneumann_log_step,
    vonneumann_update,
)

FLOOR = 1e-12


def _spd(rng: np.random.Generator, K: int) -> np.ndarray:
    B = rng.normal(size=(K, K))
    A = B @ B.T + 0.5 * np.eye(K)
    return A / np.trace(A)


def _gram(rng: np.random.Generator, K: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    W = rng.normal(size=(K, d))
    return W, W @ W.T


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("K", [2, 3, 5])
def test_logdet_matches_dense_eq_3_7(K: int, normalize: bool) -> None:
    """A_s = (A_{s-1}^{-1} + eta G)^{-1} (Eq. 3.7) with scipy's dense inverse, then unit trace."""
    rng = np.random.default_rng(K)
    A0 = _spd(rng, K)
    _, G = _gram(rng, K, 7)
    eta = 0.3
    expected = la.inv(la.inv(A0) + eta * G)
    if normalize:
        expected /= np.trace(expected)
    A, Ainv = logdet_update(la.inv(A0), G, eta, normalize=normalize, floor=FLOOR)
    np.testing.assert_allclose(A, expected, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(A @ Ainv, np.eye(K), atol=1e-10)


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("K", [2, 3, 5])
def test_vonneumann_matches_dense_eq_3_8(K: int, normalize: bool) -> None:
    """A_s = expm(logm(A_{s-1}) - eta G) (Eq. 3.8) with scipy's logm/expm, then unit trace."""
    rng = np.random.default_rng(10 + K)
    A0 = _spd(rng, K)
    _, G = _gram(rng, K, 7)
    eta = 0.05
    expected = np.real(la.expm(la.logm(A0) - eta * G))
    if normalize:
        expected /= np.trace(expected)
    A, Ainv = vonneumann_update(A0, G, eta, normalize=normalize, floor=FLOOR)
    np.testing.assert_allclose(A, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(A @ Ainv, np.eye(K), atol=1e-9)
    L, A_log, _ = vonneumann_log_step(
        np.real(la.logm(A0)), G, eta, normalize=normalize, floor=FLOOR
    )
    np.testing.assert_allclose(A_log, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(L, np.real(la.logm(expected)), rtol=1e-9, atol=1e-9)


def test_vonneumann_without_gram_changes_nothing_but_the_trace() -> None:
    """eta = 0: exp(log A) = A, so the update only rescales A to unit trace."""
    A0 = np.array([[2.0, 0.5], [0.5, 1.0]])
    A, _ = vonneumann_update(A0, np.ones((2, 2)), 0.0, normalize=True, floor=FLOOR)
    np.testing.assert_allclose(A, A0 / 3.0, rtol=1e-12)


def test_covariance_is_numpy_cov_of_the_weight_columns() -> None:
    """cov(W) of Eq. 3.9 = np.cov of the paper's d x K matrix with rowvar=False."""
    rng = np.random.default_rng(3)
    W, G = _gram(rng, 4, 9)  # ours is K x d: the paper's W is W.T
    C = covariance_from_gram(G, W.sum(axis=1), 9)
    np.testing.assert_allclose(C, np.cov(W.T, rowvar=False), rtol=1e-12, atol=1e-14)


def test_covariance_update_literal_and_as_inverse() -> None:
    """Literal: A = cov/tr (unit trace); as_inverse: A^{-1} = K^2 cov/tr (mean diagonal K)."""
    rng = np.random.default_rng(4)
    W, G = _gram(rng, 3, 20)
    C = np.cov(W.T, rowvar=False)
    C = C + 1e-6 * np.trace(C) / 3 * np.eye(3)
    A, Ainv = covariance_update(
        G, W.sum(axis=1), 20, ridge=1e-6, normalize=True, as_inverse=False, floor=FLOOR
    )
    np.testing.assert_allclose(A, C / np.trace(C), rtol=1e-10)
    np.testing.assert_allclose(Ainv, la.inv(C / np.trace(C)), rtol=1e-8)
    A2, Ainv2 = covariance_update(
        G, W.sum(axis=1), 20, ridge=1e-6, normalize=True, as_inverse=True, floor=FLOOR
    )
    np.testing.assert_allclose(Ainv2, 9.0 * C / np.trace(C), rtol=1e-10)
    np.testing.assert_allclose(A2 @ Ainv2, np.eye(3), atol=1e-10)


def test_batchopt_matches_dense_eq_3_10() -> None:
    """A = sqrtm(G) / tr(sqrtm(G)) (Eq. 3.10), unit trace, with scipy's sqrtm."""
    rng = np.random.default_rng(5)
    _, G = _gram(rng, 4, 10)
    S = np.real(la.sqrtm(G))
    A, Ainv = batchopt_update(G, ridge=0.0, as_inverse=False, floor=FLOOR)
    np.testing.assert_allclose(A, S / np.trace(S), rtol=1e-9, atol=1e-12)
    assert np.trace(A) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(A @ Ainv, np.eye(4), atol=1e-9)


def test_batchopt_of_a_rank_deficient_gram_is_ridged_and_invertible() -> None:
    """d < K gives a singular sqrt(G); the ridge keeps A positive definite and unit trace."""
    rng = np.random.default_rng(6)
    _, G = _gram(rng, 4, 2)  # rank 2
    A, Ainv = batchopt_update(G, ridge=1e-6, as_inverse=False, floor=FLOOR)
    assert np.linalg.eigvalsh(A).min() > 0
    assert np.trace(A) == pytest.approx(1.0, abs=1e-12)
    assert np.isfinite(Ainv).all()
    A0, _ = batchopt_update(np.zeros((3, 3)), ridge=1e-6, as_inverse=False, floor=FLOOR)
    np.testing.assert_allclose(A0, np.eye(3) / 3, rtol=1e-12)


def test_gram_updates_equal_the_direct_product() -> None:
    """Rank-one and batch updates of G = W W^T (algorithms.md Sec. 2.8) equal the product."""
    rng = np.random.default_rng(7)
    W = rng.normal(size=(3, 6))
    G = W @ W.T
    x, c = rng.normal(size=6), rng.normal(size=3)
    W1 = W + np.outer(c, x)
    np.testing.assert_allclose(gram_after_rank_one(G, W1 @ x, c, x @ x), W1 @ W1.T, rtol=1e-12)
    C, X = rng.normal(size=(3, 4)), rng.normal(size=(4, 6))
    W2 = W + C @ X
    np.testing.assert_allclose(gram_after_batch(G, W, C, X), W2 @ W2.T, rtol=1e-12)


def test_matrix_functions_round_trip() -> None:
    """sym_expm(sym_logm(A)) = A; the floored inverse pair multiplies to I; trace scaling."""
    A = _spd(np.random.default_rng(8), 4)
    np.testing.assert_allclose(sym_expm(sym_logm(A, FLOOR)), A, rtol=1e-10)
    M, Minv = spd_inverse_pair(A, FLOOR)
    np.testing.assert_allclose(M, A, rtol=1e-10)
    np.testing.assert_allclose(M @ Minv, np.eye(4), atol=1e-10)
    scaled, factor = normalize_trace(A, 4.0)
    assert np.trace(scaled) == pytest.approx(4.0)
    assert factor == pytest.approx(4.0 / np.trace(A))


@pytest.mark.slow
def test_vonneumann_update_is_stable_over_100000_steps() -> None:
    """100,000 log-domain Eq. 3.8 steps on a Perceptron-like growing W stay finite, symmetric,
    positive definite and unit-trace, with the eigenvalue floor binding (condition 1e12)."""
    rng = np.random.default_rng(9)
    K, d, n = 3, 6, 100_000
    X = rng.normal(size=(n, d))
    tasks = rng.integers(K, size=n)
    W = np.zeros((K, d))
    L = -np.log(K) * np.eye(K)
    traces = np.empty(n)
    smallest = []
    for s in range(n):
        W[tasks[s]] += X[s]
        L, A, Ainv = vonneumann_log_step(L, W @ W.T, 1e-3, normalize=True, floor=FLOOR)
        traces[s] = A.trace() + Ainv.trace()
        if s % 1000 == 999:
            assert np.array_equal(A, A.T) and np.array_equal(Ainv, Ainv.T)
            smallest.append(np.linalg.eigvalsh(A)[0])
    assert np.isfinite(traces).all()
    assert min(smallest) > 0.0
    assert smallest[-1] == pytest.approx(FLOOR, rel=1e-3)  # the floor binds: spread is huge
    assert np.trace(A) == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    K=st.integers(1, 5),
    log_eta=st.floats(-6.0, 2.0),
    steps=st.integers(1, 30),
)
def test_updates_keep_a_symmetric_positive_definite(
    seed: int, K: int, log_eta: float, steps: int
) -> None:
    """Repeated LogDet and von Neumann updates from I/K on growing Grams stay SPD and unit trace."""
    rng = np.random.default_rng(seed)
    W = np.zeros((K, 4))
    A_log, Ainv_log = np.eye(K) / K, K * np.eye(K)
    A_vn = np.eye(K) / K
    for _ in range(steps):
        W[rng.integers(K)] += rng.normal(size=4)
        G = W @ W.T
        eta = 10.0**log_eta / max(np.trace(G), 1e-12)
        A_log, Ainv_log = logdet_update(Ainv_log, G, eta, normalize=True, floor=FLOOR)
        A_vn, _ = vonneumann_update(A_vn, G, eta, normalize=True, floor=FLOOR)
    for A in (A_log, A_vn):
        assert np.isfinite(A).all()
        assert np.array_equal(A, A.T)
        assert np.linalg.eigvalsh(A)[0] > 0.0
        assert np.trace(A) == pytest.approx(1.0, abs=1e-9)
