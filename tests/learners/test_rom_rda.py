"""ROM-RDA (zhang2018 Algorithm 2): hand-worked steps, dense reference, invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learners.inputs import as_vector
from learners.rom import RobustRDA

SQRT2 = float(np.sqrt(2.0))


def test_hand_worked_steps_match_eqs_14_to_22() -> None:
    """K = 2, d = 2, kappa = sqrt(2), alpha = 2, beta = 1, gamma = 2; the clock t gains 1/K.

    Event 1, task 0, x = (3, 4), y = +1: t = 0 so w = 0, loss 1, g = -(3, 4):
      G_u = G_0 = (-3, -4); t = 1/2, theta = sqrt(2) sqrt(1/2) = 1.
      Eq. 20: u   = (3, 4) / (t alpha + theta) = (3, 4) / 2 = (1.5, 2)
      Eq. 21: p_0 = (3, 4) / (t beta + theta) = (3, 4) / 1.5 = (2, 8/3)
      Eq. 22: q_0 = (1/theta) (1 - gamma t / ||G_0||) (3, 4) = (1 - 1/5)(3, 4) = (2.4, 3.2)
    Event 2, task 1, x = (1, 0), y = -1: score u.x = 1.5, loss 2.5, g = (1, 0):
      G_u = (-2, -4), G_1 = (1, 0); t = 1, theta = sqrt(2).
      u   = (2, 4) / (2 + sqrt(2));  p_1 = -(1, 0) / (1 + sqrt(2));
      q_1 = 0 because gamma t = 2 >= ||G_1|| = 1.
      Task 0 was absent, yet its parts shrink with t: p_0 = (3, 4) / (1 + sqrt(2)),
      q_0 = (1 - 2/5)(3, 4) / sqrt(2) = (1.2728, 1.6971).
    Three more events of task 1 with x = 0 (zero gradient) take t to 2.5, where
    gamma t = 5 = ||G_0||: q_0 becomes exactly 0 (the absent task stops being an outlier).
    """
    model = RobustRDA(n_features=2, n_tasks=2, kappa=SQRT2, alpha=2.0, beta=1.0, gamma=2.0)
    model.learn_one(np.array([3.0, 4.0]), 1, task=0)
    np.testing.assert_allclose(model.shared_weights(), [1.5, 2.0])
    np.testing.assert_allclose(model.individual_weights()[0], [2.0, 8.0 / 3.0])
    np.testing.assert_allclose(model.outlier_weights()[0], [2.4, 3.2])
    assert model.outlier_tasks() == [0]

    assert model.decision_one(np.array([1.0, 0.0]), 1) == pytest.approx(1.5)
    model.learn_one(np.array([1.0, 0.0]), -1, task=1)
    np.testing.assert_allclose(model.shared_weights(), np.array([2.0, 4.0]) / (2.0 + SQRT2))
    np.testing.assert_allclose(model.individual_weights()[1], [-1.0 / (1.0 + SQRT2), 0.0])
    assert np.all(model.outlier_weights()[1] == 0.0)
    np.testing.assert_allclose(model.individual_weights()[0], np.array([3.0, 4.0]) / (1 + SQRT2))
    np.testing.assert_allclose(model.outlier_weights()[0], 0.6 * np.array([3.0, 4.0]) / SQRT2)
    np.testing.assert_allclose(model.outlier_scores(), [3.0 / SQRT2, 0.0])

    for _ in range(3):
        model.learn_one(np.zeros(2), 1, task=1)
    assert model.t_ == pytest.approx(2.5)
    assert np.all(model.outlier_weights() == 0.0)
    assert model.outlier_tasks() == []
    np.testing.assert_allclose(
        model.task_weights()[0],
        np.array([2.0, 4.0]) / (2.5 * 2 + SQRT2 * np.sqrt(2.5))
        + np.array([3.0, 4.0]) / (2.5 + SQRT2 * np.sqrt(2.5)),
    )


class DenseROMRDA:
    """Algorithm 2 literally: running averages (Eqs. 14-16), then Eqs. 20-22, on a round clock
    that advances by 1/K per event (so g_bar <- (t_old g_bar + g) / t_new)."""

    def __init__(self, d: int, K: int, kappa: float, alpha: float, beta: float, gamma: float):
        self.gu = np.zeros(d)
        self.gp = np.zeros((K, d))
        self.gq = np.zeros((K, d))
        self.t = 0.0
        self.kappa, self.alpha, self.beta, self.gamma = kappa, alpha, beta, gamma

    def weights(self, i: int) -> np.ndarray:
        if self.t == 0.0:
            return np.zeros_like(self.gu)
        t, theta = self.t, self.kappa * np.sqrt(self.t)
        u = -self.gu / (self.alpha + theta / t)
        p = -self.gp[i] / (self.beta + theta / t)
        norm = np.linalg.norm(self.gq[i])
        q = max(0.0, 1.0 - self.gamma / norm) * (-t * self.gq[i] / theta) if norm > 0 else 0.0
        return u + p + q

    def learn(self, x: np.ndarray, y: float, i: int) -> None:
        g = -y * x if 1.0 - y * (self.weights(i) @ x) > 0.0 else np.zeros_like(x)
        t_old, t_new = self.t, self.t + 1.0 / self.gp.shape[0]
        self.gu = (t_old * self.gu + g) / t_new
        self.gp *= t_old / t_new  # absent tasks: zero gradient this round
        self.gq *= t_old / t_new
        self.gp[i] += g / t_new
        self.gq[i] += g / t_new
        self.t = t_new


@pytest.mark.parametrize(
    "params",
    [
        {"kappa": 1.0, "alpha": 1e-2, "beta": 1e-2, "gamma": 0.05},
        {"kappa": 0.3, "alpha": 0.5, "beta": 2.0, "gamma": 0.2},
    ],
)
def test_unnormalised_sums_equal_the_averaged_reference(params: dict[str, float]) -> None:
    rng = np.random.default_rng(11)
    d, K, n = 10, 4, 1200
    model = RobustRDA(n_features=d, n_tasks=K, **params)
    ref = DenseROMRDA(d, K, **params)
    W_true = rng.normal(size=(K, d))
    W_true[3] = rng.normal(size=d) * 3  # an unrelated task
    outlier_seen = False
    for _ in range(n):
        k = int(rng.integers(K))
        x = rng.normal(size=d)
        x[rng.random(d) < 0.5] = 0.0
        y = 1.0 if W_true[k] @ x + 0.5 * rng.normal() >= 0 else -1.0
        assert model.decision_one(x, k) == pytest.approx(ref.weights(k) @ x, rel=1e-8, abs=1e-9)
        model.learn_one(x, y, k)
        ref.learn(x, y, k)
        outlier_seen |= bool(model.outlier_tasks())
    expected = np.array([ref.weights(k) for k in range(K)])
    np.testing.assert_allclose(model.task_weights(), expected, rtol=1e-8, atol=1e-9)
    assert outlier_seen, "the stream should exercise a non-zero q"


events = st.lists(
    st.tuples(
        st.lists(st.floats(-2, 2, allow_nan=False), min_size=3, max_size=3),
        st.sampled_from([-1, 1]),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=80, deadline=None)
@given(stream=events, gamma=st.floats(0.0, 3.0), kappa=st.floats(0.05, 5.0))
def test_q_is_exactly_zero_iff_the_threshold_reaches_the_summed_gradient(
    stream: list[tuple[list[float], int, int]], gamma: float, kappa: float
) -> None:
    """Eq. 22: q_i = 0 exactly when gamma t >= ||G_i|| (gamma >= ||g_bar_q^i||), else its norm
    is (||G_i|| - gamma t) / theta_t."""
    model = RobustRDA(n_features=3, n_tasks=3, gamma=gamma, kappa=kappa, outlier_rule="absolute")
    for x, y, k in stream:
        model.learn_one(np.array(x), y, k)
    Q = model.outlier_weights()
    norms = np.linalg.norm(model.G_, axis=1)
    threshold = gamma * model.t_
    for k in range(3):
        if threshold >= norms[k] * (1 + 1e-9):
            assert np.all(Q[k] == 0.0)
            assert k not in model.outlier_tasks()
        elif threshold < norms[k] * (1 - 1e-9):
            expected = (norms[k] - threshold) / (kappa * np.sqrt(model.t_))
            assert model.outlier_scores()[k] == pytest.approx(expected, rel=1e-6)
            assert k in model.outlier_tasks()


def test_the_running_norm_survives_cancellation() -> None:
    """G_1 = [0, 0, -1] then [0, 1e-30, 0]: the running ||G_1||^2 (1 - 2 + 1) cancels to 0,
    while the true one is 1e-60. It is summed again from G, so q_1 follows Eq. 22: non-zero
    with gamma = 0, and the paper's absolute rule flags the task."""
    for rows in ("kernel", "reference"):
        model = RobustRDA(n_features=3, n_tasks=2, gamma=0.0, outlier_rule="absolute")
        for x, y in (([0.0, 0.0, 1.0], 1.0), ([0.0, 1e-30, 1.0], -1.0)):
            if rows == "kernel":
                model.learn_one(np.array(x), y, 1)
            else:
                model._learn_reference(as_vector(np.array(x), 3), y, 1)
        np.testing.assert_array_equal(model.G_[1], [0.0, 1e-30, 0.0])
        assert model.G_sqnorm_[1] == pytest.approx(1e-60, rel=1e-12), rows
        assert np.linalg.norm(model.outlier_weights()[1]) > 0.0, rows
        if rows == "kernel":
            assert model.outlier_tasks() == [1]
