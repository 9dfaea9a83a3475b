"""The xu2018 baselines (random-query, independent, peer, peer-share) and query budgets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.amlc.committee import grow_peer_weights

RAW = {"append_bias": False, "l2_normalize": False}
XU2018_LEARNERS = ("amlc", "random-query", "independent", "peer", "peer-share")


def twin_draws(seed: int, n: int) -> list[float]:
    """The first ``n`` uniform draws of a learner built with ``seed`` (PCG64)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    return [float(rng.random()) for _ in range(n)]


def test_peer_rounds_by_hand():
    """PEER (algorithms.md Sec. 3.3) with K = 3, d = 2, b = bq = 1, no preprocessing.

    tau^(0): 1/2 off the diagonal, 0 on it. Seed 1 draws u = (0.512, 0.950, 0.144, 0.949, ...).
    Round 1, task 0, x = (1, 0): f = 0, P-probability 1/(1+0) = 1 (u1 < 1: P = 1);
      f_peer = 0, Q-probability 1 (u2 < 1: Q = 1): the oracle is asked. Label y = -1:
      SGN(0) = +1 != y, so w_0 = (-1, 0); peer losses (1, 1), lambda = 2: equal factors,
      tau_0 stays (0, 1/2, 1/2).
    Round 2, task 1, x = (1, 0): f = (-1, 0, 0); P-probability 1 (P = 1);
      f_peer = 1/2 (-1) + 1/2 (0) = -1/2, Q-probability 1/(1 + 1/2) = 2/3; u4 = 0.949 >= 2/3:
      Q = 0, the peers answer -1, no oracle query, and task 1 trains on it: w_1 = (-1, 0).
    Round 3, task 0, x = (1, 1), oracle label y = +1: f = (-1, -1, 0); SGN(-1) != y:
      w_0 = (0, 1); peer losses l_1 = (1 + 1) = 2, l_2 = 1, lambda = 3:
      tau_0 = (0, e^(-2/3), e^(-1/3)) / (e^(-2/3) + e^(-1/3)) = (0, 1/(1 + e^(1/3)),
      1/(1 + e^(-1/3))) = (0, 0.417430, 0.582570).
    """
    draws = twin_draws(1, 4)
    assert draws[3] >= 2 / 3  # the peers answer in round 2
    x1, x3 = np.array([1.0, 0.0]), np.array([1.0, 1.0])
    peer = learners.make("peer", n_features=2, n_tasks=3, seed=1, bq=1.0, **RAW)
    assert peer.query_one(x1, 0) is True
    peer.learn_one(x1, -1, 0)
    np.testing.assert_array_equal(peer.W_, [[-1, 0], [0, 0], [0, 0]])
    np.testing.assert_allclose(peer.relation_matrix()[0], [0, 0.5, 0.5], rtol=1e-15)
    assert peer.query_one(x1, 1) is False
    assert peer.n_queries_ == 1
    np.testing.assert_array_equal(peer.W_, [[-1, 0], [-1, 0], [0, 0]])
    peer.learn_one(x3, 1, 0)
    np.testing.assert_array_equal(peer.W_, [[0, 1], [-1, 0], [0, 0]])
    expected = [0.0, 1 / (1 + math.exp(1 / 3)), 1 / (1 + math.exp(-1 / 3))]
    np.testing.assert_allclose(peer.relation_matrix()[0], expected, rtol=1e-14)
    np.testing.assert_allclose(peer.relation_matrix()[0], [0, 0.417430, 0.582570], atol=1e-6)
    np.testing.assert_array_equal(peer.relation_matrix()[1:], [[0.5, 0, 0.5], [0.5, 0.5, 0]])


def test_peer_share_rounds_by_hand():
    """PEER+Share (algorithms.md Sec. 3.4): every queried example also corrects each peer j
    whose margin does not agree with the label (y f_j <= 0), whatever tau says.

    K = 3, d = 2, no preprocessing; labels given with learn_one (oracle answers).
    1. task 0, x = (1, 0), y = -1: f = 0, SGN(0) = +1 != y: w_0 = (-1, 0); both peers have
       y f_j = 0: W = (-1, 0) in every row.
    2. task 0, x = (1, 1), y = +1: f = (-1, -1, -1): w_0 = (0, 1); peer losses (2, 2),
       lambda = 4: tau_0 stays (0, 1/2, 1/2); peers erred: W = (0, 1) in every row.
    3. task 1, x = (0, 1), y = -1: f = (1, 1, 1): every row goes back to (0, 0).
    4. task 2, x = (1, 0), y = +1: f = 0: task 2 is right (SGN(0) = +1) and keeps (0, 0),
       but peers 0 and 1 (y f = 0) are corrected: w_0 = w_1 = (1, 0).
    """
    share = learners.make("peer-share", n_features=2, n_tasks=3, seed=0, **RAW)
    rounds = (
        ([1.0, 0.0], -1, 0, [[-1, 0]] * 3),
        ([1.0, 1.0], 1, 0, [[0, 1]] * 3),
        ([0.0, 1.0], -1, 1, [[0, 0]] * 3),
        ([1.0, 0.0], 1, 2, [[1, 0], [1, 0], [0, 0]]),
    )
    for x, label, t, W in rounds:
        share.learn_one(np.array(x), label, t)
        np.testing.assert_array_equal(share.W_, W)
    np.testing.assert_allclose(share.relation_matrix()[0], [0, 0.5, 0.5], rtol=1e-15)


def test_peer_weights_grow_uniformly():
    """A new task gets 1/K from every old task and spreads 1/K over its K peers."""
    tau = np.array([[0.0, 0.7, 0.3], [0.5, 0.0, 0.5], [0.2, 0.8, 0.0]])
    grown = grow_peer_weights(tau)
    np.testing.assert_allclose(grown[3], [1 / 3, 1 / 3, 1 / 3, 0])
    np.testing.assert_allclose(grown[:3, 3], 1 / 3)
    np.testing.assert_allclose(grown[:3, :3], tau * 2 / 3)
    np.testing.assert_allclose(grown.sum(axis=1), 1.0)
    single = learners.make("peer", n_features=2, n_tasks=1, seed=0)
    single.add_task()
    np.testing.assert_array_equal(single.relation_matrix(), [[0, 1], [1, 0]])


def test_random_query_flips_a_coin_and_updates_on_mistakes():
    """random-query asks exactly when the generator's draw is below 1/2, whatever the margin;
    a queried mistake moves only the task's own weights (plain Perceptron step)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    tasks = rng.integers(3, size=300).tolist()
    y = np.where(X[:, 0] >= 0, 1.0, -1.0)
    learner = learners.make("random-query", n_features=3, n_tasks=3, seed=4, **RAW)
    draws = twin_draws(4, 300)
    W = np.zeros((3, 3))
    for x, label, t, u in zip(X, y, tasks, draws, strict=True):
        asked = learner.query_one(x, t)
        assert asked is (u < 0.5)
        if asked:
            learner.learn_one(x, label, t)
            if (1.0 if W[t] @ x >= 0 else -1.0) != label:
                W[t] += label * x
    np.testing.assert_allclose(learner.W_, W, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(learner.relation_matrix(), np.eye(3))
    assert learner.n_queries_ == sum(u < 0.5 for u in draws)


def test_independent_is_selective_sampling_around_ipl_with_bias_and_l2():
    """independent = selective-sampling(base='ipl', b=1) with the reference preprocessing on;
    the query probability is b / (b + |<x, w_k>|) on the task's own weights."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 4))
    tasks = rng.integers(3, size=400).tolist()
    y = np.where(X[:, 1] - X[:, 2] >= 0, 1.0, -1.0)
    indep = learners.make("independent", n_features=4, n_tasks=3, seed=2)
    wrapper = learners.make(
        "selective-sampling",
        n_features=4,
        n_tasks=3,
        seed=2,
        base="ipl",
        b=1.0,
        append_bias=True,
        l2_normalize=True,
    )
    for x, label, t in zip(X, y, tasks, strict=True):
        v = indep._prepare(x).dense()
        margin = float(indep.task_weights()[t] @ v)
        assert indep.query_probability(x, t) == pytest.approx(1 / (1 + abs(margin)), rel=1e-12)
        asked = indep.query_one(x, t)
        assert asked == wrapper.query_one(x, t)
        if asked:
            indep.learn_one(x, label, t)
            wrapper.learn_one(x, label, t)
    np.testing.assert_array_equal(indep.task_weights(), wrapper.task_weights())
    assert 0 < indep.n_queries_ < 400


@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(XU2018_LEARNERS),
    budget=st.integers(0, 40),
    seed=st.integers(0, 2**16),
)
def test_budget_is_never_exceeded_and_a_spent_budget_freezes_training(name, budget, seed):
    """At most ``budget`` True answers; afterwards query_one says False without touching the
    state (no draws, no PEER self-training) while predictions go on."""
    rng = np.random.default_rng(seed)
    learner = learners.make(name, n_features=3, n_tasks=3, seed=seed, budget=budget)
    asked_total = 0
    for _ in range(150):
        x, t = rng.normal(size=3), int(rng.integers(3))
        spent = asked_total >= budget
        before = learner.state_dict() if spent else None
        weights = learner.task_weights()
        asked = learner.query_one(x, t)
        if asked:
            learner.learn_one(x, float(rng.choice([-1.0, 1.0])), t)
        asked_total += asked
        assert asked_total <= budget
        assert learner.n_queries_ == asked_total
        if before is not None:
            assert asked is False
            assert learner.state_dict()["rng"] == before["rng"]
            np.testing.assert_array_equal(learner.task_weights(), weights)
        assert np.isfinite(learner.decision_one(x, t))
