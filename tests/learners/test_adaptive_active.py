"""Selective sampling around the adaptive learners (docs/algorithms.md Sec. 11.6): the query rule
reads their margins, the budget holds, and the queried labels train the base."""

from __future__ import annotations

import numpy as np
import pytest

import learners


def _stream(n: int = 600, d: int = 6, K: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    X = rng.standard_normal((n, d))
    tasks = rng.integers(0, K, n)
    y = np.where(X[:, 0] + 0.5 * (tasks - 1) * X[:, 1] > 0, 1.0, -1.0)
    return X, y, tasks


@pytest.mark.parametrize(
    "base", ["adaptive-logistic", "adaptive-hinge", "adaptive-arow", "adaptive"]
)
def test_selective_sampling_asks_with_the_adaptive_margin(base: str) -> None:
    X, y, tasks = _stream()
    model = learners.make(
        "selective-sampling", n_features=6, n_tasks=3, base=base, b=0.5, seed=1, append_bias=True
    )
    twin = learners.make(base, n_features=6, n_tasks=3)
    asked = 0
    for x, label, t in zip(X, y, tasks.tolist(), strict=True):
        p = twin.decision_one(x, t)
        assert model.decision_one(x, t) == pytest.approx(p, abs=1e-12)
        assert model.query_probability(x, t) == pytest.approx(0.5 / (0.5 + abs(p)), abs=1e-12)
        if model.query_one(x, t):
            asked += 1
            model.learn_one(x, label, t)
            twin.learn_one(x, label, t)
    assert 20 < asked < len(X) // 2  # confident margins stop the queries
    assert model.n_queries_ == asked


def test_budget_stops_the_queries_and_the_batch_path_agrees() -> None:
    X, y, tasks = _stream()
    params = {"base": "adaptive-logistic", "b": 1.0, "budget": 40, "seed": 3}
    rows = learners.make("selective-sampling", n_features=6, n_tasks=3, **params)
    batch = learners.make("selective-sampling", n_features=6, n_tasks=3, **params)
    asked = [
        rows.query_one(x, t) and (rows.learn_one(x, lab, t) or True)
        for x, lab, t in zip(X, y, tasks.tolist(), strict=True)
    ]
    _, queried = batch.query_and_learn_many(X, y, tasks)
    assert sum(asked) == 40 == int(queried.sum())
    np.testing.assert_array_equal(np.array(asked), queried)
    np.testing.assert_allclose(batch.base_.U0_, rows.base_.U0_, rtol=0, atol=1e-12)


def test_active_adaptive_learns_from_few_labels() -> None:
    X, y, tasks = _stream(n=3000)
    model = learners.make(
        "selective-sampling", n_features=6, n_tasks=3, base="adaptive-logistic", b=0.2, seed=0
    )
    scores, queried = model.query_and_learn_many(X, y, tasks)
    late = slice(2000, None)
    assert queried.sum() < 600
    assert np.mean(np.where(scores[late] >= 0, 1.0, -1.0) != y[late]) < 0.05


@pytest.mark.parametrize("base", ["adaptive-logistic", "adaptive-arow", "adaptive-auto"])
def test_the_wrapper_keeps_an_adaptive_base_s_bias_by_default(base: str) -> None:
    """The wrapper switches the base's own preprocessing off and does it itself, so its
    ``append_bias`` defaults to the base's: on for the adaptive learners."""
    model = learners.make("selective-sampling", n_features=6, n_tasks=3, base=base)
    assert model.hyper["append_bias"] is True
    assert model.base_.hyper["append_bias"] is False  # applied once, by the wrapper
    assert model.dim == 7
    if base == "adaptive-auto":
        return  # its pairwise products learn the threshold below without a bias
    # with the bias, a task whose labels follow a threshold away from 0 is learnable
    rng = np.random.default_rng(2)
    X = rng.random((2000, 6))
    y = np.where(X[:, 0] > 0.3, 1.0, -1.0)
    tasks = np.zeros(2000, dtype=np.int64)
    errors = {}
    for bias in (True, False):
        m = learners.make(
            "selective-sampling", n_features=6, n_tasks=3, base=base, append_bias=bias, b=1e9
        )
        scores = m.score_and_learn_many(X, y, tasks)
        errors[bias] = np.mean(np.where(scores[1000:] >= 0, 1.0, -1.0) != y[1000:])
    assert errors[True] < 0.05 < errors[False]


def test_the_wrapper_s_bias_stays_as_given_or_as_saved() -> None:
    off = learners.make(
        "selective-sampling", n_features=6, n_tasks=3, base="adaptive-logistic", append_bias=False
    )
    assert off.hyper["append_bias"] is False and off.dim == 6
    restored = learners.from_state_dict(off.state_dict())
    assert restored.hyper["append_bias"] is False and restored.dim == 6
    perceptron = learners.make("selective-sampling", n_features=6, n_tasks=3, base="cmtl")
    assert perceptron.hyper["append_bias"] is False and perceptron.dim == 6
