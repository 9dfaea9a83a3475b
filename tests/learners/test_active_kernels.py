"""Compiled passes of the active learners against their numpy reference paths.

For every learner of :mod:`learners.amlc` and :mod:`learners.active` and its main
parameter sets, over seeded random streams given dense and as CSR, in blocks of
varying size: the batch paths (``score_and_learn_many``, ``query_and_learn_many``,
run by the kernels) and the row-by-row numpy path (``decision_one``,
``query_one``, ``learn_one``) give the same predictions, mistakes and query
decisions, scores and weights equal to 1e-12 relative, the same query count and
the same generator state.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.active.draws import Uniforms
from learners.active.rounds import ActiveLearner
from learners.active.selective import SelectiveSampling
from learners.inputs import Batch
from tests.learners.batch_checks import (
    assert_same_learner,
    learn_in_blocks,
    per_event,
    random_blocks,
)

K, D, N = 4, 9, 360

CASES: list[tuple[str, dict[str, Any]]] = [
    ("amlc", {}),
    ("amlc", {"faithful": "paper"}),
    ("amlc", {"faithful": "paper", "share_test": "prediction", "b": 0.5}),
    ("amlc", {"C": 0.0, "append_bias": False, "l2_normalize": False, "budget": 120}),
    ("amlc", {"similarity_rtol": 0.0, "budget": 40}),
    ("peer", {}),
    ("peer", {"bq": 1.0, "append_bias": False, "l2_normalize": False, "budget": 60}),
    ("peer-share", {}),
    ("peer-share", {"b": 3.0, "budget": 90}),
    ("random-query", {}),
    ("random-query", {"query_rate": 0.2, "append_bias": False, "l2_normalize": False}),
    ("independent", {}),
    ("independent", {"b": 0.5, "adaptive_b": True, "budget": 70}),
    ("selective-sampling", {}),
    ("selective-sampling", {"adaptive_b": True, "append_bias": True}),
    ("selective-sampling", {"base": "stl", "b": 0.5, "append_bias": True, "l2_normalize": True}),
    ("selective-sampling", {"base": "pt-global", "budget": 50}),
    ("selective-sampling", {"base": "cmtl", "base_params": {"b": 2.0}, "adaptive_b": True}),
    ("selective-sampling", {"base": "cmtl", "l2_normalize": True}),
    (
        "selective-sampling",
        {
            "base": "cmtl",
            "base_params": {"graph": [[0, 1, 0, 0], [1, 0, 2, 0], [0, 2, 0, 1], [0, 0, 1, 0]]},
        },
    ),
    ("selective-sampling", {"base": "pa-individual", "base_params": '{"variant": "pa2"}'}),
]
IDS = [f"{name}-{json.dumps(params, sort_keys=True)}" for name, params in CASES]


def stream(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows with about a third of zero entries (some rows fully dense), labels, tasks."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D))
    X[rng.random((N, D)) < 0.35] = 0.0
    X[::17] = rng.standard_normal((X[::17].shape[0], D))  # rows without zeros
    X[5] = 0.0  # an all-zero row
    w = rng.standard_normal((K, D))
    tasks = rng.integers(0, K, N)
    y = np.where(np.einsum("ij,ij->i", X, w[tasks]) >= 0.0, 1.0, -1.0)
    y[rng.random(N) < 0.1] *= -1.0
    return X, y, tasks


def make(name: str, params: dict[str, Any], seed: int) -> learners.Learner:
    return learners.make(name, n_features=D, n_tasks=K, seed=seed, **params)


def numpy_reference(
    model: ActiveLearner, X: np.ndarray, y: np.ndarray, tasks: np.ndarray, active: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The kept numpy paths, row by row on the per-event preprocessing of each row:
    ``_decision``, then (active) the budget and ``_query``, then ``_learn``."""
    batch = Batch.from_vecs([model._prepare(x) for x in X], model.dim)
    if active:
        return model._query_and_learn_reference(batch, y, tasks)
    return model._score_and_learn_reference(batch, y, tasks), np.ones(N, dtype=bool)


def in_blocks(
    model: ActiveLearner, X: Any, y: np.ndarray, tasks: np.ndarray, active: bool, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    return learn_in_blocks(model, X, y, tasks, active, random_blocks(N, 120, seed + 1000))


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("active", [False, True], ids=["labelled", "active"])
@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_batch_paths_equal_the_row_by_row_reference(
    name: str, params: dict[str, Any], active: bool, sparse: bool
) -> None:
    seed = 7 + CASES.index((name, params))
    X, y, tasks = stream(seed)
    ref = make(name, params, seed)
    fast = make(name, params, seed)
    assert isinstance(fast, ActiveLearner) and isinstance(ref, ActiveLearner)
    ref_scores, ref_asked = numpy_reference(ref, X, y, tasks, active)
    batch_input = sp.csr_matrix(X) if sparse else X
    scores, asked = in_blocks(fast, batch_input, y, tasks, active, seed)

    np.testing.assert_array_equal(asked, ref_asked)
    np.testing.assert_array_equal(scores >= 0.0, ref_scores >= 0.0)  # predictions and mistakes
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-12, atol=1e-12)
    assert_same_learner(fast, ref)
    if active:
        assert 0 < fast.n_queries_ < N  # the rule asked for some labels and skipped others
        assert fast.n_queries_ == int(asked.sum())


@pytest.mark.parametrize("active", [False, True], ids=["labelled", "active"])
@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_per_event_calls_equal_the_reference(
    name: str, params: dict[str, Any], active: bool
) -> None:
    X, y, tasks = stream(21)
    fast, ref = make(name, params, 4), make(name, params, 4)
    assert isinstance(ref, ActiveLearner)
    scores, asked = per_event(fast, X, y, tasks, active)
    ref_scores, ref_asked = numpy_reference(ref, X, y, tasks, active)
    np.testing.assert_array_equal(asked, ref_asked)
    np.testing.assert_array_equal(scores >= 0.0, ref_scores >= 0.0)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-12, atol=1e-12)
    assert_same_learner(fast, ref)


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_prepared_batch_kernel_equals_reference_method(name: str, params: dict[str, Any]) -> None:
    """``_score_and_learn_batch`` / ``_query_and_learn_batch`` on a preprocessed batch
    against the kept numpy methods ``_score_and_learn_reference`` / ``_query_and_learn_reference``."""
    X, y, tasks = stream(3)
    for active in (False, True):
        fast, ref = make(name, params, 5), make(name, params, 5)
        assert isinstance(fast, ActiveLearner) and isinstance(ref, ActiveLearner)
        batch, labels, t = fast._prepare_batch(X, y, tasks)
        if active:
            scores, asked = fast._query_and_learn_batch(batch, labels, t)
            ref_scores, ref_asked = ref._query_and_learn_reference(batch, labels, t)
            np.testing.assert_array_equal(asked, ref_asked)
        else:
            scores = fast._score_and_learn_batch(batch, labels, t)
            ref_scores = ref._score_and_learn_reference(batch, labels, t)
        np.testing.assert_allclose(scores, ref_scores, rtol=1e-12, atol=1e-12)
        assert_same_learner(fast, ref)


COMPILED = {"amlc", "peer", "peer-share", "random-query", "independent"}


@pytest.mark.parametrize(("name", "params"), CASES, ids=IDS)
def test_which_learners_run_compiled(name: str, params: dict[str, Any]) -> None:
    model = make(name, params, 0)
    assert isinstance(model, ActiveLearner)
    expected = name in COMPILED or params.get("base", "ipl") in ("ipl", "stl", "pt-global", "cmtl")
    assert model._compiled() is expected


def test_subclass_with_its_own_rule_keeps_the_numpy_path() -> None:
    """A subclass that changes ``_threshold`` is not run by the kernel (which would ignore it)."""

    class Doubled(SelectiveSampling):
        def _threshold(self, x: Any, task: int) -> float:
            return 2.0 * super()._threshold(x, task)

    a = Doubled(n_features=D, n_tasks=K, seed=2)
    b = Doubled(n_features=D, n_tasks=K, seed=2)
    assert not a._compiled()
    X, y, tasks = stream(4)
    scores, asked = a.query_and_learn_many(X, y, tasks)
    ref_scores, ref_asked = per_event(b, X, y, tasks, active=True)
    np.testing.assert_array_equal(asked, ref_asked)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-12, atol=1e-12)
    assert_same_learner(a, b)


def test_decide_and_query_reads_the_margin_a_subclass_gives() -> None:
    """A subclass whose ``_margin`` is not its score: decide_and_query's probability and
    draws follow that margin (as query_probability and query_one do), not the score."""

    class Halved(SelectiveSampling):
        def _margin(self, x: Any, task: int) -> float:
            return 0.5 * super()._margin(x, task)

    a = Halved(n_features=D, n_tasks=K, seed=6, b=0.3)
    b = Halved(n_features=D, n_tasks=K, seed=6, b=0.3)
    plain = SelectiveSampling(n_features=D, n_tasks=K, seed=6, b=0.3)
    assert plain._score_is_margin() and not a._score_is_margin()
    X, y, tasks = stream(12)
    for i in range(200):
        x, t = X[i], int(tasks[i])
        score, p, asked = a.decide_and_query(x, t, probability=True)
        assert score == b.decision_one(x, t)
        assert p == b.query_probability(x, t) == 0.3 / (0.3 + abs(0.5 * score))
        assert asked == b.query_one(x, t)
        if asked:
            a.learn_one(x, float(y[i]), t)
            b.learn_one(x, float(y[i]), t)
    assert 0 < a.n_queries_ < 200
    assert_same_learner(a, b)


def test_budget_running_out_inside_a_batch_leaves_the_generator_exact() -> None:
    """PEER draws one or two uniforms per round and none once the budget is spent."""
    X, y, tasks = stream(11)
    fast = make("peer-share", {"budget": 25}, 9)
    ref = make("peer-share", {"budget": 25}, 9)
    assert isinstance(ref, ActiveLearner)
    _, asked = fast.query_and_learn_many(X, y, tasks)
    _, ref_asked = numpy_reference(ref, X, y, tasks, active=True)
    assert int(asked.sum()) == 25 and int(np.flatnonzero(asked)[-1]) < N - 1
    np.testing.assert_array_equal(asked, ref_asked)
    assert fast.rng.random() == ref.rng.random()
    assert fast.state_dict()["rng"] == ref.state_dict()["rng"]


def test_batch_with_wrong_rows_changes_nothing() -> None:
    X, y, tasks = stream(1)
    model = make("amlc", {}, 0)
    before = model.state_dict()
    bad = X.copy()
    bad[7, 2] = np.nan
    with pytest.raises(ValueError):
        model.query_and_learn_many(bad, y, tasks)
    with pytest.raises(ValueError):
        model.score_and_learn_many(X, y, np.full(N, K))
    assert model.state_dict()["rng"] == before["rng"]
    np.testing.assert_array_equal(model.state_dict()["state.W_"], before["state.W_"])
    assert model._bias and model._normalize  # the preprocessing flags are restored


@pytest.mark.parametrize("used", [0, 1, 6, 10])
def test_uniforms_leave_the_generator_as_single_draws(used: int) -> None:
    rng = np.random.Generator(np.random.PCG64(42))
    twin = np.random.Generator(np.random.PCG64(42))
    uniforms = Uniforms(rng, 10)
    singles = [twin.random() for _ in range(used)]
    np.testing.assert_array_equal(uniforms.values[:used], singles)
    uniforms.commit(used)
    assert rng.bit_generator.state == twin.bit_generator.state
    with pytest.raises(ValueError):
        Uniforms(rng, 3, exact=True).commit(2)


def test_warm_compiles_the_kernels() -> None:
    from learners.active import kernels as selective_kernels
    from learners.amlc import kernels as amlc_kernels

    selective_kernels.warm()
    amlc_kernels.warm()
    for kernel in (
        selective_kernels.selective_pass,
        amlc_kernels.amlc_pass,
        amlc_kernels.peer_pass,
    ):
        assert len(kernel.signatures) >= 1
