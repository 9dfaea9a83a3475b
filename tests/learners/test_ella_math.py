"""The mathematical steps of the ELLA family against references (ruvolo2014, algorithms.md Sec. 4).

* base learners: closed forms / Newton against a generic minimiser, ``D`` against
  a finite-difference Hessian;
* the Lasso step (Eq. 11) against scipy's L-BFGS-B on the split ``s = p - n``;
* the GSVD atom update against a brute-force minimiser of Eq. (9);
* ELLA's L step (gradient zero) and the Incremental step (never increases).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from learners.ella.accumulators import (
    basis_objective,
    contribution,
    solve_basis,
    update_columns,
)
from learners.ella.base_learners import fit_linear, fit_logistic, icml_ridge, logistic_objective
from learners.ella.gsvd import atom_weights, eq9_objective, gsvd_rank_one
from learners.ella.lasso import is_optimal, lasso_objective, sparse_code, sparse_code_quadratic


# ------------------------------------------------------------------ base learners
def test_linear_fit_minimises_ridge_loss_and_D_is_its_half_hessian_plus_ridge() -> None:
    """theta minimises (1/n)||y - X theta||^2 + ridge ||theta||^2; D = ridge I + X^T X / n."""
    rng = np.random.default_rng(0)
    X, y, ridge = rng.normal(size=(30, 4)), rng.normal(size=30), 0.3
    theta, D = fit_linear(X.T @ X, X.T @ y, 30, ridge)
    ref = minimize(lambda t: np.mean((y - X @ t) ** 2) + ridge * t @ t, np.zeros(4), tol=1e-12)
    np.testing.assert_allclose(theta, ref.x, atol=1e-5)
    np.testing.assert_allclose(D, ridge * np.eye(4) + X.T @ X / 30, atol=1e-12)


def test_icml_linear_fit_golden_bias_free() -> None:
    """ICML / MATLAB form (algorithms.md Sec. 4.1, #12), worked by hand.

    X = [[1, 1], [2, 1]] (last column the bias), y = [1, 3], ridge = 2, n = 2, I' = diag(1, 0):
    X^T X + ridge I' = [[7, 3], [3, 2]] (det 5), X^T y = [7, 4], so
    theta = (1/5) [[2, -3], [-3, 7]] [7, 4] = [0.4, 1.4] and D = [[7, 3], [3, 2]] / 2.
    The per-coordinate penalty is ridge / n on the weight and 0 on the bias: [1, 0].
    """
    X, y = np.array([[1.0, 1.0], [2.0, 1.0]]), np.array([1.0, 3.0])
    p = icml_ridge(2.0, 2, 2, logistic=False, free_bias=True)
    np.testing.assert_allclose(p, [1.0, 0.0])
    theta, D = fit_linear(X.T @ X, X.T @ y, 2, p)
    np.testing.assert_allclose(theta, [0.4, 1.4], atol=1e-12)
    np.testing.assert_allclose(D, [[3.5, 1.5], [1.5, 1.0]], atol=1e-12)


def test_icml_ridge_scales_with_n_and_halves_for_logistic() -> None:
    np.testing.assert_allclose(icml_ridge(0.6, 3, 3, logistic=True, free_bias=False), [0.1] * 3)
    np.testing.assert_allclose(icml_ridge(0.6, 3, 3, logistic=True, free_bias=True), [0.1, 0.1, 0])
    np.testing.assert_allclose(icml_ridge(0.6, 3, 0, logistic=False, free_bias=True), [0.6] * 3)


def test_icml_logistic_D_is_half_the_hessian_of_the_whole_objective() -> None:
    """D = (1/(2n)) (sum p_i (1 - p_i) x_i x_i^T + ridge I'): half the finite-difference
    Hessian of (1/n) sum log(1 + exp(-y x.theta)) + (ridge / (2n)) ||theta'||^2 at theta."""
    rng = np.random.default_rng(4)
    X = np.hstack([rng.normal(size=(40, 2)), np.ones((40, 1))])
    y = np.where(X @ [1.0, -1.0, 0.2] + rng.normal(size=40) > 0, 1.0, -1.0)
    p = icml_ridge(0.5, 3, 40, logistic=True, free_bias=True)
    theta, D = fit_logistic(X, y, p)
    ref = minimize(lambda t: logistic_objective(t, X, y, p), np.zeros(3), tol=1e-12)
    np.testing.assert_allclose(theta, ref.x, atol=1e-4)
    h = 1e-4
    H = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            ei, ej = h * np.eye(3)[i], h * np.eye(3)[j]
            f = [
                logistic_objective(theta + a + b, X, y, p)
                for a, b in ((ei, ej), (ei, -ej), (-ei, ej), (-ei, -ej))
            ]
            H[i, j] = (f[0] - f[1] - f[2] + f[3]) / (4 * h * h)
    np.testing.assert_allclose(D, H / 2, atol=1e-5)


def test_linear_fit_without_data_is_zero_with_ridge_D() -> None:
    theta, D = fit_linear(np.zeros((3, 3)), np.zeros(3), 0, 0.5)
    assert np.array_equal(theta, np.zeros(3))
    assert np.array_equal(D, 0.5 * np.eye(3))


def test_logistic_fit_minimises_objective_and_D_matches_finite_differences() -> None:
    """D = ridge I + Hessian of (1/(2n)) sum log(1 + exp(-y x.theta)) (Eq. 7)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    y = np.where(X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=60) > 0, 1.0, -1.0)
    ridge = 0.05
    theta, D = fit_logistic(X, y, ridge)
    ref = minimize(lambda t: logistic_objective(t, X, y, ridge), np.zeros(3), tol=1e-12)
    np.testing.assert_allclose(theta, ref.x, atol=1e-5)

    def half_loss(t: np.ndarray) -> float:
        return float(np.mean(np.logaddexp(0.0, -y * (X @ t))) / 2)

    h, H = 1e-4, np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            ei, ej = np.eye(3)[i] * h, np.eye(3)[j] * h
            H[i, j] = (
                half_loss(theta + ei + ej)
                - half_loss(theta + ei - ej)
                - half_loss(theta - ei + ej)
                + half_loss(theta - ei - ej)
            ) / (4 * h * h)
    np.testing.assert_allclose(D, ridge * np.eye(3) + H, atol=1e-6)


# ---------------------------------------------------------------------- Lasso
def test_lasso_golden_one_atom() -> None:
    """k = 1: L = [1, 0]^T, D = 2I, theta = [3, 1], mu = 1.

    Q = L^T D L = 2, c = L^T D theta = 6; the objective 2 s^2 - 12 s + |s| has
    derivative 4 s - 12 + 1 = 0 at s = 11/4 = 2.75.
    """
    s = sparse_code(np.array([[1.0], [0.0]]), 2 * np.eye(2), np.array([3.0, 1.0]), 1.0)
    np.testing.assert_allclose(s, [2.75], atol=1e-12)


def test_lasso_golden_zero_when_mu_dominates() -> None:
    """|c| = 6 <= mu / 2 = 6.5 -> s = 0 (optimality: |2(Qs - c)| = 12 <= mu = 13)."""
    s = sparse_code(np.array([[1.0], [0.0]]), 2 * np.eye(2), np.array([3.0, 1.0]), 13.0)
    assert np.array_equal(s, [0.0])


def _reference_lasso(Q: np.ndarray, c: np.ndarray, mu: float) -> float:
    """Min of s^T Q s - 2 c^T s + mu |s|_1 via s = p - n, p, n >= 0 (smooth, bounded)."""
    k = c.shape[0]

    def f(z: np.ndarray) -> float:
        s = z[:k] - z[k:]
        return float(s @ Q @ s - 2 * c @ s + mu * z.sum())

    def grad(z: np.ndarray) -> np.ndarray:
        g = 2 * Q @ (z[:k] - z[k:]) - 2 * c
        return np.concatenate([g + mu, -g + mu])

    best = np.inf
    for start in (np.zeros(2 * k),):
        res = minimize(
            f,
            start,
            jac=grad,
            bounds=[(0, None)] * (2 * k),
            method="L-BFGS-B",
            options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 20000},
        )
        best = min(best, float(res.fun))
    return best


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    k=st.integers(1, 6),
    extra=st.integers(0, 6),
    mu=st.sampled_from([0.0, 1e-3, 0.1, 1.0, 5.0]),
)
def test_lasso_matches_reference_solver(seed: int, k: int, extra: int, mu: float) -> None:
    """On random problems with d >= k the code reaches the reference minimum and is optimal."""
    rng = np.random.default_rng(seed)
    d = k + extra
    L = rng.normal(size=(d, k))
    R = rng.normal(size=(d, d))
    D = R @ R.T / d + 0.1 * np.eye(d)
    theta = 2 * rng.normal(size=d)
    s = sparse_code(L, D, theta, mu)
    Q, c = L.T @ D @ L, L.T @ D @ theta
    ref = _reference_lasso(Q, c, mu)
    value = float(s @ Q @ s - 2 * c @ s + mu * np.abs(s).sum())
    assert value <= ref + 1e-7 * (1 + abs(ref))
    assert is_optimal(Q, c, mu, s, tol=1e-7)
    const = float(theta @ D @ theta)
    assert lasso_objective(L, D, theta, s, mu) == pytest.approx(value + const, rel=1e-9, abs=1e-9)


def test_lasso_singular_quadratic_reaches_reference() -> None:
    """k > d (Q singular): the fallback still reaches the reference minimum."""
    rng = np.random.default_rng(3)
    L = rng.normal(size=(3, 5))
    Q = L.T @ L
    c = L.T @ rng.normal(size=3)
    s = sparse_code_quadratic(Q, c, 0.2)
    ref = _reference_lasso(Q, c, 0.2)
    assert float(s @ Q @ s - 2 * c @ s + 0.2 * np.abs(s).sum()) <= ref + 1e-6


def test_lasso_ignores_all_zero_atoms() -> None:
    L = np.array([[1.0, 0.0], [0.0, 0.0]])
    s = sparse_code(L, np.eye(2), np.array([1.0, 1.0]), 0.0)
    np.testing.assert_allclose(s, [1.0, 0.0])


# ----------------------------------------------------------------------- GSVD
def test_gsvd_golden_rank_one_residuals() -> None:
    """E = [[2, 4], [0, 0]], D_t = I for both tasks: M = I, w = [1/2, 1/2] (Eq. 10: 2 / 4 each).

    E~ = E / sqrt(2) has sigma_1 = sqrt(20 / 2), u_1 = e_1, v_1 = [1, 2] / sqrt(5);
    l = u_1 = [1, 0] and s = sigma_1 v_1 / sqrt(1/2) = sqrt(20) [1, 2] / sqrt(5) = [2, 4],
    so l s^T = E exactly and Eq. (9) is 0.
    """
    E = np.array([[2.0, 4.0], [0.0, 0.0]])
    M, w = atom_weights(np.stack([np.eye(2), np.eye(2)]))
    np.testing.assert_allclose(M, np.eye(2))
    np.testing.assert_allclose(w, [0.5, 0.5])
    atom, s = gsvd_rank_one(E, M, w)
    np.testing.assert_allclose(atom, [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(s, [2.0, 4.0], atol=1e-12)


def test_atom_weights_follow_eq10() -> None:
    Ds = np.stack([np.array([[2.0, 1.0], [1.0, 2.0]]), np.eye(2)])
    M, w = atom_weights(Ds)
    np.testing.assert_allclose(M, (Ds[0] + Ds[1]) / 2)
    np.testing.assert_allclose(w, [6 / 8, 2 / 8])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(1, 4), r=st.integers(1, 4))
def test_gsvd_matches_brute_force_minimiser_of_eq9(seed: int, d: int, r: int) -> None:
    """No pair (l, s) found by a generic minimiser from several starts beats the GSVD step."""
    rng = np.random.default_rng(seed)
    Ds = []
    for _ in range(r):
        R = rng.normal(size=(d, d))
        Ds.append(R @ R.T + 0.2 * np.eye(d))
    M, w = atom_weights(np.stack(Ds))
    E = rng.normal(size=(d, r))
    atom, s = gsvd_rank_one(E, M, w)
    value = eq9_objective(E, M, w, atom, s)
    assert atom @ M @ atom == pytest.approx(1.0, rel=1e-9)

    def f(z: np.ndarray) -> float:
        return eq9_objective(E, M, w, z[:d], z[d:])

    best = np.inf
    for _ in range(3):
        res = minimize(f, rng.normal(size=d + r), method="BFGS", options={"gtol": 1e-10})
        best = min(best, float(res.fun))
    assert value <= best + 1e-7 * (1 + best)


# ------------------------------------------------------------- ELLA basis steps
def _random_tasks(rng: np.random.Generator, T: int, d: int, k: int) -> tuple[np.ndarray, ...]:
    S = rng.normal(size=(T, k)) * (rng.random((T, k)) < 0.7)
    thetas = rng.normal(size=(T, d))
    Ds = np.stack(
        [(lambda R: R @ R.T / d + 0.1 * np.eye(d))(rng.normal(size=(d, d))) for _ in range(T)]
    )
    A = sum(contribution(S[t], Ds[t], thetas[t])[0] for t in range(T))
    b = sum(contribution(S[t], Ds[t], thetas[t])[1] for t in range(T))
    return S, thetas, Ds, np.asarray(A), np.asarray(b)


def test_contribution_is_the_kronecker_form() -> None:
    rng = np.random.default_rng(4)
    s, D, theta = rng.normal(size=3), rng.normal(size=(2, 2)), rng.normal(size=2)
    A, b = contribution(s, D, theta)
    np.testing.assert_array_equal(A, np.kron(np.outer(s, s), D))
    np.testing.assert_array_equal(b, np.kron(s, D @ theta))


def test_ella_basis_golden_one_dimension() -> None:
    """d = k = 1, one task with s = 2, D = 3, theta = 1, lam = 0.5:
    L = (s^2 D / T + lam)^{-1} s D theta / T = 6 / 12.5 = 0.48."""
    A, b = contribution(np.array([2.0]), np.array([[3.0]]), np.array([1.0]))
    L = solve_basis(A, b, 1, 0.5, 1, 1)
    np.testing.assert_allclose(L, [[0.48]])


def test_ella_basis_step_zeroes_the_gradient_of_its_objective() -> None:
    """Slow reference: the gradient 2 lam L - (2/T) sum_t D_t (theta_t - L s_t) s_t^T vanishes."""
    rng = np.random.default_rng(5)
    T, d, k, lam = 6, 4, 3, 0.2
    S, thetas, Ds, A, b = _random_tasks(rng, T, d, k)
    L = solve_basis(A, b, T, lam, d, k)
    grad = 2 * lam * L
    for t in range(T):
        grad -= (2 / T) * np.outer(Ds[t] @ (thetas[t] - L @ S[t]), S[t])
    np.testing.assert_allclose(grad, 0.0, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), lam=st.sampled_from([0.0, 0.01, 1.0]))
def test_incremental_step_never_increases_the_basis_objective(seed: int, lam: float) -> None:
    rng = np.random.default_rng(seed)
    T, d, k = 5, 3, 4
    S, thetas, Ds, A, b = _random_tasks(rng, T, d, k)
    L = rng.normal(size=(d, k))
    before = basis_objective(L, S, thetas, Ds, lam)
    columns = sorted(rng.choice(k, size=int(rng.integers(1, k + 1)), replace=False).tolist())
    after_L = update_columns(L, A, b, T, lam, columns)
    assert basis_objective(after_L, S, thetas, Ds, lam) <= before + 1e-9 * (1 + abs(before))
    untouched = [j for j in range(k) if j not in columns]
    np.testing.assert_array_equal(after_L[:, untouched], L[:, untouched])


def test_incremental_sweeps_converge_to_the_exact_basis_step() -> None:
    """Block Gauss-Seidel over all columns, repeated, reaches ELLA's exact minimiser."""
    rng = np.random.default_rng(6)
    T, d, k, lam = 6, 3, 3, 0.1
    *_, A, b = _random_tasks(rng, T, d, k)
    L = rng.normal(size=(d, k))
    for _ in range(500):
        L = update_columns(L, A, b, T, lam, range(k))
    np.testing.assert_allclose(L, solve_basis(A, b, T, lam, d, k), atol=1e-8)
