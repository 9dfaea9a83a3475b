"""ROM-PGD (zhang2018 Algorithm 1): hand-worked steps, dense reference, invariants."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.inputs import as_vector
from learners.rom import RobustPGD


def test_hand_worked_steps_match_eqs_6_7_8_10() -> None:
    """K = 2, d = 2, eta = 0.5, alpha = beta = gamma = 1, so m = 2 and eta*gamma = 0.5.

    Event 1, task 0, x = (3, 4), y = +1: score 0, loss 1 > 0, g = -(3, 4).
      Eq. 7:  p_0 = (0 + 0.5 (3, 4)) / (1 + 0.5) = (1.5, 2) / 1.5 = (1, 4/3)
      Eq. 8:  q_hat = 0.5 (3, 4) = (1.5, 2), ||q_hat|| = 2.5
      Eq. 10: q_0 = (1 - 0.5 / 2.5) q_hat = 0.8 (1.5, 2) = (1.2, 1.6)
      Eq. 6:  u = (0 + (0.5/2)(3, 4)) / (1 + 0.5/2) = (0.75, 1) / 1.25 = (0.6, 0.8)
    so w_0 = (2.8, 3.7333...) and w_1 = u = (0.6, 0.8).
    Event 2, task 1, x = (1, 0), y = -1: score w_1.x = 0.6, loss 1.6, g = (1, 0).
      Eq. 7:  p_1 = (0 - 0.5 (1, 0)) / 1.5 = (-1/3, 0)
      Eq. 10: ||q_hat|| = 0.5 <= eta*gamma = 0.5, so q_1 = 0 exactly
      Eq. 6:  u = ((0.6, 0.8) - 0.25 (1, 0)) / 1.25 = (0.28, 0.64)
    Event 3, task 0, x = (0, 1), y = +1: score 0.64 + 4/3 + 1.6 = 3.5733 >= 1, loss 0:
      p_0, q_0 unchanged; Eq. 6 still shrinks u = (0.28, 0.64) / 1.25 = (0.224, 0.512).
    """
    model = RobustPGD(n_features=2, n_tasks=2, eta=0.5, alpha=1.0, beta=1.0, gamma=1.0)
    model.learn_one(np.array([3.0, 4.0]), 1, task=0)
    np.testing.assert_allclose(model.individual_weights()[0], [1.0, 4.0 / 3.0])
    np.testing.assert_allclose(model.outlier_weights()[0], [1.2, 1.6])
    np.testing.assert_allclose(model.shared_weights(), [0.6, 0.8])
    np.testing.assert_allclose(model.task_weights(), [[2.8, 0.8 + 4 / 3 + 1.6], [0.6, 0.8]])

    assert model.decision_one(np.array([1.0, 0.0]), 1) == pytest.approx(0.6)
    model.learn_one(np.array([1.0, 0.0]), -1, task=1)
    np.testing.assert_allclose(model.individual_weights()[1], [-1.0 / 3.0, 0.0])
    assert np.all(model.outlier_weights()[1] == 0.0)
    np.testing.assert_allclose(model.shared_weights(), [0.28, 0.64])

    assert model.decision_one(np.array([0.0, 1.0]), 0) == pytest.approx(0.64 + 4 / 3 + 1.6)
    model.learn_one(np.array([0.0, 1.0]), 1, task=0)
    np.testing.assert_allclose(model.individual_weights()[0], [1.0, 4.0 / 3.0])
    np.testing.assert_allclose(model.outlier_weights()[0], [1.2, 1.6])
    np.testing.assert_allclose(model.shared_weights(), [0.224, 0.512])
    assert model.n_updates_ == 2
    np.testing.assert_allclose(model.outlier_scores(), [2.0, 0.0])
    assert model.outlier_tasks() == [0]


class DenseROMPGD:
    """The obvious dense loop of Algorithm 1 in the per-event form (m = K)."""

    def __init__(self, d: int, K: int, eta: float, alpha: float, beta: float, gamma: float):
        self.u = np.zeros(d)
        self.P = np.zeros((K, d))
        self.Q = np.zeros((K, d))
        self.eta, self.alpha, self.beta, self.gamma = eta, alpha, beta, gamma

    def score(self, x: np.ndarray, i: int) -> float:
        return float((self.u + self.P[i] + self.Q[i]) @ x)

    def learn(self, x: np.ndarray, y: float, i: int) -> None:
        eta, m = self.eta, self.P.shape[0]
        active = 1.0 - y * self.score(x, i) > 0.0
        g = -y * x if active else np.zeros_like(x)
        if active:
            self.P[i] = (self.P[i] - eta * g) / (1.0 + self.beta * eta)
            q_hat = self.Q[i] - eta * g
            norm = np.linalg.norm(q_hat)
            self.Q[i] = max(0.0, 1.0 - eta * self.gamma / norm) * q_hat if norm > 0 else 0.0
        self.u = (self.u - eta / m * g) / (1.0 + self.alpha * eta / m)

    def add_task(self) -> None:
        self.P = np.vstack([self.P, np.zeros(self.P.shape[1])])
        self.Q = np.vstack([self.Q, np.zeros(self.Q.shape[1])])


@pytest.mark.parametrize(
    ("params", "d", "zeros", "min_clears"),
    [
        ({"eta": 0.1, "alpha": 1e-2, "beta": 1e-2, "gamma": 0.3}, 12, 0.0, 0),
        # alpha*eta/K = 10: the lazy scale of u underflows and is folded back every ~100 events
        ({"eta": 0.5, "alpha": 60.0, "beta": 5.0, "gamma": 0.05}, 12, 0.6, 0),
        # ~4 non-zeros in d = 80: q_i is zeroed at the entries it was written at only
        ({"eta": 0.3, "alpha": 1e-2, "beta": 1.0, "gamma": 1.2}, 80, 0.95, 50),
    ],
)
def test_lazy_scaled_form_equals_the_dense_reference(
    params: dict[str, float], d: int, zeros: float, min_clears: int
) -> None:
    rng = np.random.default_rng(7)
    K, n = 3, 1500
    model = RobustPGD(n_features=d, n_tasks=K, **params)
    ref = DenseROMPGD(d, K, **params)
    W_true = rng.normal(size=(K + 1, d))
    folded = cleared = 0
    for step in range(n):
        if step == n // 2:
            assert model.add_task() == K
            ref.add_task()
        k = int(rng.integers(model.n_tasks))
        x = rng.normal(size=d) * rng.uniform(0.2, 1.5)
        x[rng.random(d) < zeros] = 0.0
        y = 1.0 if W_true[k] @ x + 0.3 * rng.normal() >= 0 else -1.0
        assert model.decision_one(x, k) == pytest.approx(ref.score(x, k), rel=1e-9, abs=1e-9)
        was_outlier = model.q_sqnorm_[k] > 0.0
        model.learn_one(x, y, k)
        ref.learn(x, y, k)
        folded += model.u_scale_ == 1.0
        cleared += bool(was_outlier and model.q_sqnorm_[k] == 0.0)
    assert folded > 5 or params["alpha"] < 1
    np.testing.assert_allclose(model.shared_weights(), ref.u, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.individual_weights(), ref.P, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.outlier_weights(), ref.Q, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.outlier_scores(), np.linalg.norm(ref.Q, axis=1), atol=1e-9)
    assert (np.linalg.norm(ref.Q, axis=1) > 0).any(), "the stream should exercise non-zero q"
    assert cleared >= min_clears, "the stream should zero non-zero q_i columns (Eq. 10)"


events = st.lists(
    st.tuples(
        st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4),
        st.sampled_from([-1, 1]),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(stream=events, gamma_margin=st.floats(0.0, 5.0), eta=st.floats(0.01, 2.0))
def test_q_stays_exactly_zero_when_the_threshold_exceeds_every_step(
    stream: list[tuple[list[float], int, int]], gamma_margin: float, eta: float
) -> None:
    """From q_i = 0, one step gives ||q_hat|| = eta ||x||; with gamma > max ||x|| (so the
    Eq. 10 threshold eta*gamma exceeds ||q_hat||) every q_i stays exactly 0 and no task is an
    outlier. (gamma exceeds the largest norm by a relative 1e-12, above rounding.)"""
    X = np.array([x for x, _, _ in stream])
    gamma = float(np.linalg.norm(X, axis=1).max()) * (1.0 + 1e-12) + gamma_margin
    model = RobustPGD(n_features=4, n_tasks=3, eta=eta, gamma=gamma)
    for x, y, k in stream:
        model.learn_one(np.array(x), y, k)
    assert np.all(model.outlier_weights() == 0.0)
    assert np.all(model.outlier_scores() == 0.0)
    assert model.outlier_tasks() == []


def test_alpha_beta_zero_gamma_infinite_single_task_is_hinge_ogd() -> None:
    """algorithms.md Sec. 10: with alpha = beta = 0, Q = 0 and K = 1, u and p both move by
    eta y x on a positive loss, so w moves by 2 eta y x: OGD on the hinge with step 2 eta."""
    rng = np.random.default_rng(3)
    model = RobustPGD(n_features=5, n_tasks=1, eta=0.2, alpha=0.0, beta=0.0, gamma=1e9)
    w = np.zeros(5)
    for _ in range(300):
        x = rng.normal(size=5)
        y = 1.0 if x[0] - x[1] >= 0 else -1.0
        assert model.decision_one(x, 0) == pytest.approx(w @ x, abs=1e-12)
        model.learn_one(x, y, 0)
        if 1.0 - y * (w @ x) > 0:
            w = w + 2 * 0.2 * y * x
    np.testing.assert_allclose(model.task_weights()[0], w, atol=1e-12)


def test_relation_matrix_is_cosine_similarity_of_task_weights() -> None:
    model = learners.make("rom-pgd", n_features=3, n_tasks=3, gamma=0.1)
    model.learn_one(np.array([1.0, 0.0, 0.0]), 1, task=0)
    model.learn_one(np.array([0.0, 1.0, 0.0]), -1, task=1)
    W = model.task_weights()
    R = model.relation_matrix()
    assert R is not None
    unit = W / np.linalg.norm(W, axis=1, keepdims=True)
    np.testing.assert_allclose(R, unit @ unit.T, atol=1e-12)
    np.testing.assert_allclose(np.diag(R), 1.0)


@pytest.mark.parametrize("rows", ["kernel dense", "kernel csr", "reference"])
def test_the_running_norm_of_q_hat_survives_cancellation(rows: str) -> None:
    """q_1 = [0, 0, 1], then a step of -1 along [0, 1e-20, 1]: the running ||q_hat||^2
    (1 - 2 + 1) cancels to 0 while the true one is 1e-40. It is summed again entry by
    entry, so Eq. 10 keeps q_hat = [0, -1e-20, 0] (its norm exceeds eta*gamma = 1e-40) and
    the paper's absolute rule flags the task."""
    model = RobustPGD(
        n_features=3, n_tasks=2, eta=1.0, alpha=0.0, beta=0.0, gamma=1e-40, outlier_rule="absolute"
    )
    for x, y in (([0.0, 0.0, 1.0], 1.0), ([0.0, 1e-20, 1.0], -1.0)):
        if rows == "reference":
            model._learn_reference(as_vector(np.array(x), 3), y, 1)
        elif rows == "kernel csr":
            model.learn_many(sp.csr_matrix(np.array([x])), np.array([y]), np.array([1]))
        else:
            model.learn_one(np.array(x), y, 1)
    np.testing.assert_array_equal(model.outlier_weights()[1], [0.0, -1e-20, 0.0])
    assert model.q_sqnorm_[1] == pytest.approx(1e-40, rel=1e-12)
    assert model.outlier_tasks() == [1]


pool_events = st.tuples(
    st.lists(
        st.lists(st.floats(-1, 1, allow_nan=False, allow_subnormal=False), min_size=3, max_size=3),
        min_size=1,
        max_size=3,
    ),
    st.lists(st.tuples(st.integers(0, 2), st.sampled_from([-1, 1])), min_size=1, max_size=40),
)


@settings(max_examples=200, deadline=None)
@given(events=pool_events, gamma=st.sampled_from([0.0, 1e-12, 1e-3]), eta=st.floats(0.01, 2.0))
def test_the_running_norm_of_q_is_the_norm_of_the_stored_q(
    events: tuple[list[list[float]], list[tuple[int, int]]], gamma: float, eta: float
) -> None:
    """Rows drawn again and again from a pool of three, with either label, make steps that
    undo q_i exactly or nearly (Eq. 8); the kept ||q_i||^2 must still be that of the
    stored q_i (Eq. 10 compares its square root with eta*gamma)."""
    pool, stream = events
    model = RobustPGD(n_features=3, n_tasks=1, eta=eta, alpha=0.0, beta=0.0, gamma=gamma)
    for j, y in stream:
        model.learn_one(np.array(pool[j % len(pool)]), float(y), 0)
        q = model.outlier_weights()[0]
        assert model.q_sqnorm_[0] == pytest.approx(float(q @ q), rel=1e-9, abs=1e-300)
