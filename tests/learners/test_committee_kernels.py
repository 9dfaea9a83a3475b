"""Compiled passes of ``amlc-adaptive``, ``peer-adaptive`` and ``peer-share-adaptive``
(:mod:`learners.active.adaptive_kernels`) against the row-by-row numpy rounds of
:mod:`learners.active.committees` (docs/algorithms.md Sec. 11.6).

Over seeded streams long enough that the weights ``tau`` move and labels are shared,
given dense and as CSR, in blocks of varying size, for the three adaptive members,
the ``adaptive`` selector, an outlier part, budgets and several b: the batch paths
give the reference's predictions and query decisions, scores and every array of the
state to 1e-12 relative, the same query count and the same generator state.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.active.adaptive_kernels import warm
from learners.active.committees import AdaptivePeer
from learners.active.rounds import ActiveLearner
from learners.inputs import Batch
from tests.learners.batch_checks import (
    assert_same_learner,
    learn_in_blocks,
    per_event,
    random_blocks,
)

K, D, N = 4, 9, 600

CASES: list[tuple[str, dict[str, Any]]] = [
    ("amlc-adaptive", {}),
    ("amlc-adaptive", {"base": "adaptive-arow", "b": 0.3, "budget": 60, "append_bias": False}),
    ("amlc-adaptive", {"base": "adaptive-hinge", "b": 2.0, "l2_normalize": True}),
    ("amlc-adaptive", {"base": "adaptive", "base_params": {"etas": "0.5,2"}, "budget": 150}),
    ("amlc-adaptive", {"base_params": {"outlier_gamma": 0.05, "b": 0.5}, "C": 0.0}),
    ("peer-adaptive", {}),
    ("peer-adaptive", {"base": "adaptive-hinge", "bq": 1.0, "budget": 50, "l2_normalize": True}),
    ("peer-adaptive", {"base": "adaptive", "b": 3.0, "bq": 0.5, "log_scale": True}),
    ("peer-adaptive", {"base_params": {"outlier_gamma": 0.1}, "b": 0.5}),
    ("peer-share-adaptive", {}),
    ("peer-share-adaptive", {"base": "adaptive-arow", "b": 0.5, "budget": 90}),
    # pooled configurations (b = 0) of the logistic loss and AROW; a pooled hinge step ends
    # on the margin 1 exactly, where a shared label of the same row then steps or not by a
    # rounding bit, so no hinge configuration is pooled here
    (
        "peer-share-adaptive",
        {
            "base": "adaptive",
            "base_params": {"losses": "logistic,arow", "couplings": "0,1"},
            "append_bias": False,
        },
    ),
]
IDS = [f"{name}-{json.dumps(params, sort_keys=True)}" for name, params in CASES]


def stream(seed: int, n_tasks: int = K) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Related tasks (a shared direction plus a per-task one); about a third of the entries
    are zero, some rows have none and one row is all zero; 10% of the labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D)) * rng.uniform(0.5, 3.0, D)
    X[rng.random((N, D)) < 0.35] = 0.0
    X[::13] = rng.standard_normal((X[::13].shape[0], D))  # rows without zeros
    X[7] = 0.0
    shared = rng.standard_normal(D)
    w = shared + 0.7 * rng.standard_normal((n_tasks, D))
    tasks = rng.integers(0, n_tasks, N)
    y = np.where(np.einsum("ij,ij->i", X, w[tasks]) >= 0.0, 1.0, -1.0)
    y[rng.random(N) < 0.1] *= -1.0
    return X, y, tasks


def make(name: str, params: dict[str, Any], seed: int, n_tasks: int = K) -> ActiveLearner:
    model = learners.make(name, n_features=D, n_tasks=n_tasks, seed=seed, **params)
    assert isinstance(model, ActiveLearner)
    return model


def numpy_reference(
    model: ActiveLearner, X: np.ndarray, y: np.ndarray, tasks: np.ndarray, active: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The numpy rounds on the per-event preprocessing of each row."""
    batch = Batch.from_vecs([model._prepare(x) for x in X], model.dim)
    if active:
        return model._query_and_learn_reference(batch, y, tasks)
    return model._score_and_learn_reference(batch, y, tasks), np.ones(len(y), dtype=bool)


def in_blocks(
    model: ActiveLearner, X: Any, y: np.ndarray, tasks: np.ndarray, active: bool, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    return learn_in_blocks(model, X, y, tasks, active, random_blocks(N, 150, seed + 1000))


def assert_same_rounds(
    fast: ActiveLearner,
    ref: ActiveLearner,
    scores: np.ndarray,
    asked: np.ndarray,
    ref_scores: np.ndarray,
    ref_asked: np.ndarray,
) -> None:
    np.testing.assert_array_equal(asked, ref_asked)
    np.testing.assert_array_equal(scores >= 0.0, ref_scores >= 0.0)  # predictions
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-12, atol=1e-12)
    assert fast.n_queries_ == ref.n_queries_
    assert_same_learner(fast, ref)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("active", [False, True], ids=["labelled", "active"])
@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_batch_paths_equal_the_numpy_rounds(
    name: str, params: dict[str, Any], active: bool, sparse: bool
) -> None:
    seed = 11 + CASES.index((name, params))
    X, y, tasks = stream(seed)
    ref, fast = make(name, params, seed), make(name, params, seed)
    assert fast._compiled()
    ref_scores, ref_asked = numpy_reference(ref, X, y, tasks, active)
    scores, asked = in_blocks(fast, sp.csr_matrix(X) if sparse else X, y, tasks, active, seed)
    assert_same_rounds(fast, ref, scores, asked, ref_scores, ref_asked)
    tau = fast.relation_matrix()
    assert tau is not None
    pooled = "couplings" in params.get("base_params", {})  # a pooled leader: equal margins
    if params.get("C", 1.0) > 0.0 and not pooled:
        assert np.ptp(tau[~np.eye(K, dtype=bool)]) > 1e-3  # the weights moved
    learned = float(fast.base_.stats_[1])  # type: ignore[attr-defined]
    if active:
        assert 0 < fast.n_queries_ < N
        assert fast.n_queries_ == int(asked.sum())
        if "budget" in params:
            assert fast.n_queries_ == params["budget"]
    if name != "peer-adaptive" and not active:
        assert learned > N  # labels were shared with peers
    if name != "amlc-adaptive" and active:
        assert learned > fast.n_queries_  # the peers answered some rounds (or labels shared)


@pytest.mark.parametrize("active", [False, True], ids=["labelled", "active"])
@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_per_event_calls_equal_the_numpy_rounds(
    name: str, params: dict[str, Any], active: bool
) -> None:
    """``decision_one``, ``learn_one`` and ``score_and_learn_one`` run the compiled pass on
    one row (``per_event_kernel``); ``query_one`` keeps its numpy draw."""
    seed = 31 + CASES.index((name, params))
    X, y, tasks = stream(seed)
    fast, ref = make(name, params, seed), make(name, params, seed)
    assert type(fast).per_event_kernel and fast._compiled()
    scores, asked = per_event(fast, X, y, tasks, active)
    ref_scores, ref_asked = numpy_reference(ref, X, y, tasks, active)
    assert_same_rounds(fast, ref, scores, asked, ref_scores, ref_asked)
    if name != "peer-adaptive" and not active:
        assert float(fast.base_.stats_[1]) > N  # type: ignore[attr-defined]  # labels shared


def test_decide_and_query_follows_a_subclass_query_rule() -> None:
    """A PEER subclass with its own ``_query`` (ask always, no draw): decide_and_query
    takes the three calls, not PEER's margins-once path, and answers as they do."""

    class Eager(AdaptivePeer):
        def _query(self, x: Any, task: int) -> bool:
            return True

    a = Eager(n_features=D, n_tasks=K, seed=3)
    b = Eager(n_features=D, n_tasks=K, seed=3)
    X, y, tasks = stream(5)
    for i in range(120):
        x, t = X[i], int(tasks[i])
        expected = (a.decision_one(x, t), a.query_probability(x, t), a.query_one(x, t))
        assert b.decide_and_query(x, t, probability=True) == expected
        a.learn_one(x, float(y[i]), t)
        b.learn_one(x, float(y[i]), t)
    assert a.n_queries_ == b.n_queries_ == 120
    assert_same_learner(a, b)


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_prepared_batches_equal_the_reference_methods(name: str, params: dict[str, Any]) -> None:
    """``_score_and_learn_batch`` / ``_query_and_learn_batch`` on a preprocessed batch
    (the kernel without its own preprocessing) against the numpy methods."""
    X, y, tasks = stream(3)
    for active in (False, True):
        fast, ref = make(name, params, 5), make(name, params, 5)
        batch, labels, t = fast._prepare_batch(X, y, tasks)
        if active:
            scores, asked = fast._query_and_learn_batch(batch, labels, t)
            ref_scores, ref_asked = ref._query_and_learn_reference(batch, labels, t)
        else:
            scores = fast._score_and_learn_batch(batch, labels, t)
            ref_scores = ref._score_and_learn_reference(batch, labels, t)
            asked = ref_asked = np.ones(N, dtype=bool)
        assert_same_rounds(fast, ref, scores, asked, ref_scores, ref_asked)


@pytest.mark.parametrize("name", ["amlc-adaptive", "peer-adaptive", "peer-share-adaptive"])
def test_batches_mixed_with_per_event_calls_and_a_new_task(name: str) -> None:
    """Per-event calls, batches and ``add_task`` in between: the weights and the base
    grow, and the batch pass carries on from the per-event state."""
    X, y, tasks = stream(8)
    fast, ref = make(name, {"b": 1.5}, 2), make(name, {"b": 1.5}, 2)
    for model in (fast, ref):
        for i in range(40):
            if model.query_one(X[i], int(tasks[i])):
                model.learn_one(X[i], float(y[i]), int(tasks[i]))
        model.add_task()
    grown = np.where(np.arange(N) % 5 == 0, K, tasks)
    scores, asked = fast.query_and_learn_many(X[40:], y[40:], grown[40:])
    ref_scores, ref_asked = numpy_reference(ref, X[40:], y[40:], grown[40:], True)
    np.testing.assert_array_equal(asked, ref_asked)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-12, atol=1e-12)
    scores = fast.score_and_learn_many(X[:200], y[:200], grown[:200])
    ref_scores, _ = numpy_reference(ref, X[:200], y[:200], grown[:200], False)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-12, atol=1e-12)
    assert_same_learner(fast, ref)


@pytest.mark.parametrize("name", ["amlc-adaptive", "peer-adaptive", "peer-share-adaptive"])
def test_a_single_task_has_no_peers(name: str) -> None:
    X, y, _ = stream(4, n_tasks=1)
    tasks = np.zeros(N, dtype=np.int64)
    for active in (False, True):
        fast, ref = make(name, {}, 3, n_tasks=1), make(name, {}, 3, n_tasks=1)
        scores, asked = in_blocks(fast, X, y, tasks, active, 4)
        ref_scores, ref_asked = numpy_reference(ref, X, y, tasks, active)
        assert_same_rounds(fast, ref, scores, asked, ref_scores, ref_asked)


def test_other_bases_keep_the_numpy_rounds() -> None:
    """A base that is not an adaptive learner (here ``ipl``) runs the numpy rounds."""
    X, y, tasks = stream(6)
    fast, ref = make("amlc-adaptive", {"base": "ipl"}, 1), make("amlc-adaptive", {"base": "ipl"}, 1)
    assert not fast._compiled()
    scores, asked = fast.query_and_learn_many(X, y, tasks)
    ref_scores, ref_asked = numpy_reference(ref, X, y, tasks, True)
    np.testing.assert_array_equal(asked, ref_asked)
    np.testing.assert_array_equal(scores, ref_scores)
    assert_same_learner(fast, ref)


def test_warm_compiles_both_passes() -> None:
    warm()
