"""selective-sampling: the Cesa-Bianchi-Gentile-Zaniboni rule around any margin learner."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.active.selective import (
    ADAPTIVE_B,
    SAMPLING_B,
    SelectiveSampling,
    default_on,
)
from learners.base import APPEND_BIAS, BUDGET, L2_NORMALIZE
from tests.learners.reference import noisy_stream, run, sgn


def active_run(
    model: learners.Learner, X: np.ndarray, y: np.ndarray, tasks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Score, ask, learn when asked. Returns scores and query decisions."""
    scores, asked = np.empty(len(X)), np.zeros(len(X), dtype=bool)
    for n, (x, label, t) in enumerate(zip(X, y, tasks.tolist(), strict=True)):
        scores[n] = model.decision_one(x, t)
        asked[n] = model.query_one(x, t)
        if asked[n]:
            model.learn_one(x, label, t)
    return scores, asked


def reference_selective_perceptrons(
    X: np.ndarray, y: np.ndarray, tasks: np.ndarray, K: int, b: float, adaptive: bool, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-task selective-sampling Perceptrons written out (algorithms.md Sec. 6).

    ``p = w_k.x``; ``Z ~ Bernoulli(b_t / (b_t + |p|))`` with one uniform draw per round from
    PCG64(seed); if Z and SGN(p) != y: ``w_k += y x``. Adaptive:
    ``b_t = b max(||x||^2, R_k^2) sqrt(1 + n_k)``, and each update sets ``n_k += 1``,
    ``R_k^2 = max(R_k^2, ||x||^2)``.
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    W = np.zeros((K, X.shape[1]))
    n_updates, radius2 = np.zeros(K), np.zeros(K)
    scores, asked = np.empty(len(X)), np.zeros(len(X), dtype=bool)
    for n, (x, label, t) in enumerate(zip(X, y, tasks, strict=True)):
        p = float(W[t] @ x)
        scores[n] = p
        sq = float(x @ x)
        bt = b * max(sq, radius2[t]) * math.sqrt(1 + n_updates[t]) if adaptive else b
        prob = 1.0 if bt + abs(p) == 0 else bt / (bt + abs(p))
        asked[n] = rng.random() < prob
        if asked[n] and sgn(p) != label:
            W[t] += label * x
            n_updates[t] += 1
            radius2[t] = max(radius2[t], sq)
    return scores, asked, W


def test_hand_worked_fixed_b():
    """ipl base, b = 1, one task, d = 2.

    1. x = (1, 0), y = -1: w = 0, margin 0, probability 1/(1 + 0) = 1: asked. SGN(0) = +1 != -1:
       w = (-1, 0).
    2. x = (3, 0): margin -3, probability 1/(1 + 3) = 0.25.
    3. x = (0, 2): margin 0, probability 1.
    """
    model = learners.make("selective-sampling", n_features=2, n_tasks=1)
    assert model.query_probability(np.array([1.0, 0.0]), 0) == 1.0
    assert model.query_one(np.array([1.0, 0.0]), 0)
    model.learn_one(np.array([1.0, 0.0]), -1, 0)
    np.testing.assert_array_equal(model.task_weights(), [[-1.0, 0.0]])
    assert model.query_probability(np.array([3.0, 0.0]), 0) == 0.25
    assert model.query_probability(np.array([0.0, 2.0]), 0) == 1.0
    assert model.n_queries_ == 1


def test_hand_worked_adaptive_b():
    """Adaptive b = 1: ``b_t = max(||x||^2, R^2) sqrt(1 + n)``.

    1. x = (2, 0), y = -1: R_t^2 = 4, n = 0, b_t = 4; margin 0, probability 1; a mistake:
       w = (-2, 0), n = 1, R^2 = 4.
    2. x = (1, 0): margin -2, b_t = max(1, 4) sqrt(2) = 4 sqrt 2,
       probability 4 sqrt 2 / (4 sqrt 2 + 2) = 2 sqrt 2 / (2 sqrt 2 + 1) = 0.73879...
    3. x = (1, 0), y = +1 (margin -2, a mistake): n = 2, R^2 = max(4, 1) = 4, w = (-1, 0).
       Next x = (3, 0): margin -3, b_t = 9 sqrt 3, probability 9 sqrt 3 / (9 sqrt 3 + 3).
    """
    model = learners.make("selective-sampling", n_features=2, n_tasks=1, adaptive_b=True)
    assert model.query_probability(np.array([2.0, 0.0]), 0) == 1.0
    model.learn_one(np.array([2.0, 0.0]), -1, 0)
    p = model.query_probability(np.array([1.0, 0.0]), 0)
    assert p == pytest.approx(2 * math.sqrt(2) / (2 * math.sqrt(2) + 1), rel=1e-14)
    assert p == pytest.approx(0.73879, abs=1e-5)
    model.learn_one(np.array([1.0, 0.0]), 1, 0)
    state = model.state_dict()
    assert state["state.n_updates_"].tolist() == [2]
    assert state["state.radius2_"].tolist() == [4.0]
    p3 = model.query_probability(np.array([3.0, 0.0]), 0)
    assert p3 == pytest.approx(9 * math.sqrt(3) / (9 * math.sqrt(3) + 3), rel=1e-14)


@pytest.mark.parametrize(("b", "adaptive"), [(1.0, False), (0.2, False), (1.0, True)])
def test_matches_the_reference_loop(b, adaptive):
    """Queries, scores and weights equal the written-out per-task rule, draw for draw."""
    K, d = 3, 5
    X, y, tasks = noisy_stream(3000, K, d, seed=51)
    model = learners.make(
        "selective-sampling", n_features=d, n_tasks=K, seed=7, b=b, adaptive_b=adaptive
    )
    scores, asked = active_run(model, X, y, tasks)
    ref_scores, ref_asked, ref_W = reference_selective_perceptrons(X, y, tasks, K, b, adaptive, 7)
    np.testing.assert_array_equal(asked, ref_asked)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(model.task_weights(), ref_W, rtol=1e-12, atol=1e-12)
    assert 0 < asked.sum() < len(X)
    assert model.n_queries_ == asked.sum()


def test_huge_b_queries_everything_and_equals_the_base():
    """b -> inf: every label is asked for, so the wrapper is the plain base learner."""
    K, d = 3, 4
    X, y, tasks = noisy_stream(1000, K, d, seed=52)
    model = learners.make("selective-sampling", n_features=d, n_tasks=K, base="cmtl", b=1e300)
    plain = learners.make("cmtl", n_features=d, n_tasks=K)
    scores, asked = active_run(model, X, y, tasks)
    assert asked.all()
    np.testing.assert_array_equal(scores, run(plain, X, y, tasks))
    np.testing.assert_array_equal(model.task_weights(), plain.task_weights())


def test_base_params_reach_the_base_and_state_stays_plain():
    as_text = learners.make(
        "selective-sampling", n_features=3, n_tasks=2, base="cmtl", base_params='{"b": 0.0}'
    )
    as_dict = learners.make(
        "selective-sampling", n_features=3, n_tasks=2, base="cmtl", base_params={"b": 0.0}
    )
    assert as_text.hyper["base_params"] == as_dict.hyper["base_params"] == '{"b": 0.0}'
    np.testing.assert_array_equal(as_text.relation_matrix(), np.eye(2))
    state = as_text.state_dict()
    assert state["state.base.learner"] == "cmtl"
    assert state["state.base.param.b"] == 0.0
    assert "state.base.state.V_" in state
    for key, value in state.items():
        assert isinstance(value, np.ndarray | int | float | str | bool | type(None)), key
    json.dumps({k: v for k, v in state.items() if not isinstance(v, np.ndarray)})
    graph = {"graph": np.array([[0.0, 2.0], [2.0, 0.0]])}
    with_array = learners.make(
        "selective-sampling", n_features=3, n_tasks=2, base="cmtl", base_params=graph
    )
    assert json.loads(with_array.hyper["base_params"]) == {"graph": [[0.0, 2.0], [2.0, 0.0]]}
    np.testing.assert_allclose(with_array.relation_matrix(), [[3.0, -2.0], [-2.0, 3.0]])


def test_state_round_trip_restores_the_base():
    K, d = 3, 4
    X, y, tasks = noisy_stream(600, K, d, seed=53)
    model = learners.make(
        "selective-sampling", n_features=d, n_tasks=K, base="pa-individual", adaptive_b=True
    )
    active_run(model, X[:300], y[:300], tasks[:300])
    restored = learners.from_state_dict(model.state_dict())
    a = active_run(model, X[300:], y[300:], tasks[300:])
    b = active_run(restored, X[300:], y[300:], tasks[300:])
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"base": "no-such-learner"}, "unknown learner"),
        ({"base": "selective-sampling"}, "already active"),
        ({"base_params": "[1, 2]"}, "JSON object"),
        ({"base_params": "{not json"}, "base_params"),
        ({"base_params": '{"append_bias": true}'}, "give them to the wrapper"),
        ({"base_params": '{"budget": 3}'}, "give them to the wrapper"),
        ({"base": "cmtl", "base_params": '{"b": -1}'}, "'b'"),
        ({"base": "ipl", "base_params": '{"b": 1}'}, "unknown parameter"),
        ({"b": 0.0}, "'b'"),
    ],
)
def test_bad_parameters_raise(params, message):
    with pytest.raises(ValueError, match=message):
        learners.make("selective-sampling", n_features=3, n_tasks=2, **params)


@settings(max_examples=40, deadline=None)
@given(
    x=st.lists(st.floats(-5, 5), min_size=3, max_size=3),
    b=st.floats(1e-3, 1e3),
    seed=st.integers(0, 1000),
)
def test_query_probability_is_b_over_b_plus_abs_margin(x, b, seed):
    """p = b/(b + |decision|) in (0, 1], and the query decision is one uniform draw below p."""
    X, y, tasks = noisy_stream(50, 2, 3, seed=seed)
    model = learners.make("selective-sampling", n_features=3, n_tasks=2, b=b, seed=seed)
    for xi, label, t in zip(X, y, tasks.tolist(), strict=True):
        model.learn_one(xi, label, t)
    v = np.array(x)
    margin = model.decision_one(v, 1)
    p = model.query_probability(v, 1)
    assert 0.0 < p <= 1.0
    assert p == pytest.approx(b / (b + abs(margin)), rel=1e-12)
    draw = np.random.Generator(np.random.PCG64(0))
    draw.bit_generator.state = model.rng.bit_generator.state
    assert model.query_one(v, 1) == (draw.random() < p)


class PooledSelective(SelectiveSampling):
    """A fixed-base subclass, as the extension point documents: pooled base, bias + L2 on."""

    name = "test-pooled-selective"
    params = (SAMPLING_B, ADAPTIVE_B, BUDGET, default_on(APPEND_BIAS), default_on(L2_NORMALIZE))

    def _base_spec(self) -> tuple[str, dict[str, Any]]:
        return "stl", {}


def test_subclass_with_a_fixed_base():
    model = PooledSelective(n_features=3, n_tasks=2)
    assert model.dim == 4 and model.base_.n_features == 4 and model.base_.name == "stl"
    assert not model.base_.hyper["append_bias"]
    model.learn_one(np.array([3.0, 0.0, 0.0]), -1, 0)
    # bias appended then L2-normalised: (3, 0, 0, 1)/sqrt(10); stl learns it for every task
    expected = -np.array([3.0, 0.0, 0.0, 1.0]) / math.sqrt(10)
    np.testing.assert_allclose(model.task_weights(), [expected, expected], atol=1e-15)
    assert 0 < model.query_probability(np.array([1.0, 1.0, 0.0]), 1) < 1


@pytest.mark.parametrize("base", ["cmtl", "adaptive-logistic"])
def test_log_scale_equals_the_wrapper_on_log_scaled_rows(base: str) -> None:
    """``log_scale`` replaces x by sign(x) log(1 + |x|) before the bias and the unit length
    (docs/algorithms.md Sec. 0): the same queries, scores and state as the wrapper without it
    on rows scaled up front, in the compiled batch pass and event by event; zeros stay zeros."""
    rng = np.random.default_rng(21)
    X = np.round(rng.exponential(2.0, size=(200, 5))) * rng.choice([-1.0, 1.0], size=(200, 5))
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    tasks = rng.integers(0, 3, size=200)
    logged = np.copysign(np.log1p(np.abs(X)), X)
    assert ((logged == 0.0) == (X == 0.0)).all()
    common = {"base": base, "b": 0.7, "append_bias": True, "l2_normalize": True}
    on = learners.make("selective-sampling", n_features=5, n_tasks=3, log_scale=True, **common)
    off = learners.make("selective-sampling", n_features=5, n_tasks=3, **common)
    s_on, q_on = on.query_and_learn_many(X, y, tasks)
    s_off, q_off = off.query_and_learn_many(logged, y, tasks)
    np.testing.assert_array_equal(q_on, q_off)
    np.testing.assert_array_equal(s_on, s_off)
    one = learners.make("selective-sampling", n_features=5, n_tasks=3, log_scale=True, **common)
    s_one, q_one = active_run(one, X, y, tasks)
    np.testing.assert_array_equal(q_one, q_on)
    np.testing.assert_allclose(s_one, s_on, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="log_scale"):
        learners.make(
            "selective-sampling",
            n_features=5,
            n_tasks=3,
            base="adaptive-logistic",
            base_params={"log_scale": True},
        )
