"""How the per-event ROM forms relate to the paper's synchronous rounds (zhang2018 Algs. 1, 2).

A paper round gives every task one instance and evaluates all gradients at the
weights of the round's start; our stream gives one task per event. When every
hinge loss is positive the gradients (-y x) do not depend on the weights, so a
stream cycling through the K tasks can be compared round for round:

* ROM-RDA: after every K events the round clock is t = T and the sums equal the
  paper's, so the weights agree for any alpha, beta, gamma, kappa;
* ROM-PGD: with alpha = 0 they agree; with alpha > 0 the per-event form shrinks
  ``u`` K times per round (the documented difference).
"""

from __future__ import annotations

import numpy as np
import pytest

from learners.rom import RobustPGD, RobustRDA

K, D, ROUNDS = 3, 4, 6


def always_positive_loss_rounds(seed: int) -> np.ndarray:
    """(ROUNDS, K, D) tiny instances: |w.x| stays far below 1, so every hinge loss is > 0."""
    return np.random.default_rng(seed).normal(size=(ROUNDS, K, D)) * 1e-3


def labels(seed: int) -> np.ndarray:
    return np.random.default_rng(seed + 1).choice([-1.0, 1.0], size=(ROUNDS, K))


def synchronous_pgd(
    X: np.ndarray, Y: np.ndarray, eta: float, alpha: float, beta: float, gamma: float
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Algorithm 1 verbatim (m = K tasks per round); ``(u, P + Q)`` after each round."""
    u, P, Q = np.zeros(D), np.zeros((K, D)), np.zeros((K, D))
    out = []
    for x_round, y_round in zip(X, Y):
        grads = []
        for i in range(K):
            x, y = x_round[i], y_round[i]
            assert 1 - y * (u + P[i] + Q[i]) @ x > 0
            g = -y * x
            grads.append(g)
            P[i] = (P[i] - eta * g) / (1 + beta * eta)
            q_hat = Q[i] - eta * g
            Q[i] = max(0.0, 1 - eta * gamma / np.linalg.norm(q_hat)) * q_hat
        u = (u - eta / K * np.sum(grads, axis=0)) / (1 + alpha * eta / K)
        out.append((u.copy(), P + Q))
    return out


def synchronous_rda(
    X: np.ndarray, Y: np.ndarray, kappa: float, alpha: float, beta: float, gamma: float
) -> list[np.ndarray]:
    """Algorithm 2 verbatim with averaged gradients (Eqs. 14-16, 20-22)."""
    gu, gp = np.zeros(D), np.zeros((K, D))
    out = []
    for t, (x_round, y_round) in enumerate(zip(X, Y), start=1):
        gsum = np.zeros(D)
        for i in range(K):
            g = -y_round[i] * x_round[i]
            gp[i] = g / t + (t - 1) / t * gp[i]
            gsum += g
        gu = gsum / t + (t - 1) / t * gu
        theta = kappa * np.sqrt(t)
        u = -gu / (alpha + theta / t)
        W = []
        for i in range(K):
            p = -gp[i] / (beta + theta / t)
            shrink = max(0.0, 1 - gamma / np.linalg.norm(gp[i]))
            W.append(u + p + shrink * (-t * gp[i] / theta))
        out.append(np.array(W))
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_rda_cyclic_events_equal_synchronous_rounds(seed: int) -> None:
    X, Y = always_positive_loss_rounds(seed), labels(seed)
    params = {"kappa": 0.7, "alpha": 0.3, "beta": 2.0, "gamma": 5e-4}
    model = RobustRDA(n_features=D, n_tasks=K, **params)
    expected = synchronous_rda(X, Y, **params)
    for r in range(ROUNDS):
        for i in range(K):
            model.learn_one(X[r, i], Y[r, i], i)
        assert model.t_ == pytest.approx(r + 1)
        np.testing.assert_allclose(model.task_weights(), expected[r], rtol=1e-10, atol=1e-15)
    assert model.n_updates_ == ROUNDS * K


@pytest.mark.parametrize("seed", [0, 1])
def test_pgd_cyclic_events_equal_synchronous_rounds_when_alpha_is_zero(seed: int) -> None:
    X, Y = always_positive_loss_rounds(seed), labels(seed)
    params = {"eta": 0.4, "alpha": 0.0, "beta": 0.5, "gamma": 1e-3}
    model = RobustPGD(n_features=D, n_tasks=K, **params)
    expected = synchronous_pgd(X, Y, **params)
    for r in range(ROUNDS):
        for i in range(K):
            model.learn_one(X[r, i], Y[r, i], i)
        u, PQ = expected[r]
        np.testing.assert_allclose(model.task_weights(), u + PQ, rtol=1e-10, atol=1e-15)


def test_pgd_with_alpha_shrinks_u_once_per_event_not_once_per_round() -> None:
    """The documented difference: per round the paper shrinks u by 1/(1 + alpha eta/m); the
    per-event form by (1 + alpha eta/K)^-K. The rest of the model agrees."""
    X, Y = always_positive_loss_rounds(3), labels(3)
    params = {"eta": 0.4, "alpha": 2.0, "beta": 0.5, "gamma": 1e-3}
    model = RobustPGD(n_features=D, n_tasks=K, **params)
    for i in range(K):
        model.learn_one(X[0, i], Y[0, i], i)
    u_paper, PQ_paper = synchronous_pgd(X[:1], Y[:1], **params)[0]
    eta, shrink = params["eta"], 1.0 / (1.0 + params["alpha"] * params["eta"] / K)
    u_events = sum(eta / K * Y[0, i] * X[0, i] * shrink ** (K - i) for i in range(K))
    u_round = sum(eta / K * Y[0, i] * X[0, i] for i in range(K)) * shrink
    np.testing.assert_allclose(u_paper, u_round, rtol=1e-12)
    np.testing.assert_allclose(model.shared_weights(), u_events, rtol=1e-12)
    assert not np.allclose(model.shared_weights(), u_paper, rtol=1e-3)
    parts = model.individual_weights() + model.outlier_weights()
    np.testing.assert_allclose(parts, PQ_paper, rtol=1e-12)
