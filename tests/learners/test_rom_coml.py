"""COML [R] (algorithms.md Sec. 5.6): hand-worked steps, dense reference, nu = 0 is PA-I."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.rom import CollaborativeMultitask


def test_hand_worked_steps() -> None:
    """K = 2, d = 2, C = 1, nu = 1 (l = hinge loss, c = (w_k + nu u)/(1 + nu)).

    Event 1, task 0, x = (1, 1), y = +1, ||x||^2 = 2:
      global: l(u) = 1, tau_u = min(1, 1/2) = 0.5, u = (0.5, 0.5)
      task 0: c = (0 + u)/2 = (0.25, 0.25), l(c) = 0.5, tau = min(1, 2 * 0.5 / 2) = 0.5,
              w_0 = c + 0.5 x / 2 = (0.5, 0.5)
    Event 2, task 1, x = (2, 0), y = -1, ||x||^2 = 4 (w_1 = 0, so the score is 0):
      global: u.x = 1, l(u) = 2, tau_u = 0.5, u = (0.5, 0.5) - 0.5 (2, 0) = (-0.5, 0.5);
              w_0 is untouched: (0.5, 0.5)
      task 1: c = u/2 = (-0.25, 0.25), c.x = -0.5, l(c) = 0.5, tau = min(1, 2 * 0.5/4) = 0.25,
              w_1 = c - 0.25 (2, 0)/2 = (-0.5, 0.25)
    Event 3, task 0, x = (0, 1), y = +1 (score w_0.x = 0.5):
      global: l(u) = 0.5, tau_u = 0.5, u = (-0.5, 1)
      task 0: c = ((0.5, 0.5) + (-0.5, 1))/2 = (0, 0.75), l(c) = 0.25, tau = 0.5,
              w_0 = (0, 0.75) + 0.5 (0, 1)/2 = (0, 1); w_1 stays (-0.5, 0.25).
    """
    model = CollaborativeMultitask(n_features=2, n_tasks=2, C=1.0, nu=1.0)
    model.learn_one(np.array([1.0, 1.0]), 1, task=0)
    np.testing.assert_allclose(model.u_, [0.5, 0.5])
    np.testing.assert_allclose(model.task_weights(), [[0.5, 0.5], [0.0, 0.0]])
    assert model.decision_one(np.array([2.0, 0.0]), 1) == 0.0
    model.learn_one(np.array([2.0, 0.0]), -1, task=1)
    np.testing.assert_allclose(model.u_, [-0.5, 0.5])
    np.testing.assert_allclose(model.task_weights(), [[0.5, 0.5], [-0.5, 0.25]])
    assert model.decision_one(np.array([0.0, 1.0]), 0) == pytest.approx(0.5)
    model.learn_one(np.array([0.0, 1.0]), 1, task=0)
    np.testing.assert_allclose(model.u_, [-0.5, 1.0])
    np.testing.assert_allclose(model.task_weights(), [[0.0, 1.0], [-0.5, 0.25]], atol=1e-15)


class DenseCOML:
    """The reconstruction written out densely: global PA-I, then the pulled PA-I step."""

    def __init__(self, d: int, K: int, C: float, nu: float) -> None:
        self.u = np.zeros(d)
        self.W = np.zeros((K, d))
        self.C, self.nu = C, nu

    def learn(self, x: np.ndarray, y: float, k: int) -> None:
        sq = x @ x
        if sq == 0.0:
            return
        loss_u = max(0.0, 1.0 - y * (self.u @ x))
        self.u = self.u + min(self.C, loss_u / sq) * y * x
        c = (self.W[k] + self.nu * self.u) / (1.0 + self.nu)
        tau = min(self.C, (1.0 + self.nu) * max(0.0, 1.0 - y * (c @ x)) / sq)
        self.W[k] = c + tau * y * x / (1.0 + self.nu)

    def add_task(self) -> None:
        self.W = np.vstack([self.W, np.zeros(self.W.shape[1])])


@pytest.mark.parametrize(("C", "nu"), [(1.0, 1.0), (0.2, 9.0), (5.0, 0.3)])
def test_scaled_form_equals_the_dense_reference(C: float, nu: float) -> None:
    rng = np.random.default_rng(5)
    d, K, n = 8, 3, 1500
    model = CollaborativeMultitask(n_features=d, n_tasks=K, C=C, nu=nu)
    ref = DenseCOML(d, K, C, nu)
    W_true = rng.normal(size=(K + 1, d))
    for step in range(n):
        if step == n // 3:
            model.add_task()
            ref.add_task()
        k = int(rng.integers(model.n_tasks))
        x = rng.normal(size=d)
        x[rng.random(d) < 0.4] = 0.0
        y = 1.0 if W_true[k] @ x + 0.3 * rng.normal() >= 0 else -1.0
        assert model.decision_one(x, k) == pytest.approx(ref.W[k] @ x, rel=1e-9, abs=1e-9)
        model.learn_one(x, y, k)
        ref.learn(x, y, k)
    np.testing.assert_allclose(model.task_weights(), ref.W, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.u_, ref.u, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    stream=st.lists(
        st.tuples(
            st.lists(st.floats(-3, 3, allow_nan=False), min_size=3, max_size=3),
            st.sampled_from([-1, 1]),
            st.integers(0, 1),
        ),
        max_size=30,
    ),
    C=st.floats(0.01, 10.0),
)
def test_nu_zero_is_independent_pa1(stream: list[tuple[list[float], int, int]], C: float) -> None:
    """With nu = 0 the pull vanishes (c = w_k) and each task is a PA-I learner."""
    coml = CollaborativeMultitask(n_features=3, n_tasks=2, C=C, nu=0.0)
    pa = learners.make("pa-individual", n_features=3, n_tasks=2, variant="pa1", C=C)
    for x, y, k in stream:
        v = np.array(x)
        assert coml.decision_one(v, k) == pytest.approx(pa.decision_one(v, k), abs=1e-9)
        coml.learn_one(v, y, k)
        pa.learn_one(v, y, k)
    pa_weights = pa.task_weights()
    assert pa_weights is not None
    np.testing.assert_allclose(coml.task_weights(), pa_weights, atol=1e-9)
