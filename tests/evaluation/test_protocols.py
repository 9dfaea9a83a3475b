"""The online and split protocols: hand-computed cases and a plain reference loop."""

from __future__ import annotations

import json

import numpy as np
import pytest

import learners
from evaluation import protocols
from evaluation.catalog import load_dataset
from evaluation.common import aggregate, auc, learner_seed
from evaluation.dataset import Dataset

KEYS = {
    "dataset",
    "learner",
    "params",
    "protocol",
    "runs",
    "metrics",
    "per_task",
    "relation_matrix",
    "weight_correlation",
}


def constant_stream(n_per_task: int = 6) -> Dataset:
    """Two tasks, every row x = [1] with label -1; rows alternate between the tasks."""
    n = 2 * n_per_task
    return Dataset(
        name="constant",
        X=np.ones((n, 1)),
        y=-np.ones(n),
        task=np.arange(n) % 2,
        task_names=["a", "b"],
        draw_split=lambda rng: np.zeros(n, dtype=np.int8),
    )


@pytest.mark.parametrize(("learner", "expected"), [("ipl", 2), ("stl", 1), ("cmtl", 1)])
def test_online_mistakes_on_a_constant_stream(learner, expected):
    """Every learner starts at w = 0, so its first prediction is the tie value +1: a mistake.

    ipl: each task's own Perceptron errs once (2 mistakes). stl: the pooled vector
    becomes -x after the first mistake (1). cmtl with b = K = 2: a mistake of task i
    moves w_i by -2/3 x and w_j by -1/3 x (A^{-1} = (I + 11^T)/3), so the other
    task's score is -1/3 < 0 and it never errs (1). Whatever the order, so the
    figures are the same in every run and std = CI = 0.
    """
    doc = protocols.get("online").run(constant_stream(), learner, {}, runs=3, seed=7, budget=None)
    assert set(doc) >= KEYS
    m = doc["metrics"]
    assert m["mistakes_mean"] == expected
    assert m["mistake_rate_mean"] == pytest.approx(expected / 12)
    assert m["mistakes_std"] == 0 and m["mistakes_ci95"] == 0
    assert m["queries_mean"] == 12
    assert m["auc_mean"] is None  # one class only: AUC undefined
    assert [e["task"] for e in doc["per_task"]] == ["a", "b"]
    assert sum(e["mistakes_mean"] for e in doc["per_task"]) == expected
    json.dumps(doc, allow_nan=False)


def split_stream() -> Dataset:
    """Train: 5 rows per task, x = [1], y = -1. Test: 2 rows per task, task a y = -1, task b y = +1."""
    task = np.r_[np.arange(10) % 2, [0, 0, 1, 1]]
    y = np.r_[-np.ones(10), [-1.0, -1.0, 1.0, 1.0]]
    split = np.r_[np.zeros(10), np.ones(4)].astype(np.int8)
    return Dataset("two-tasks", np.ones((14, 1)), y, task, ["a", "b"], split=split)


def test_split_accuracy_and_per_task_figures():
    """ipl learns w_a = w_b = -1 (one mistake each): task a's test rows are right, task b's wrong."""
    doc = protocols.get("split").run(split_stream(), "ipl", {}, runs=2, seed=0, budget=None)
    m = doc["metrics"]
    assert m["accuracy_mean"] == 0.5
    assert (m["mistakes_mean"], m["queries_mean"]) == (2, 10)
    a, b = doc["per_task"]
    assert (a["accuracy_mean"], b["accuracy_mean"]) == (1.0, 0.0)
    assert (a["mistakes_mean"], a["queries_mean"]) == (1, 5)


def test_budget_stops_label_consumption_but_not_the_mistake_count():
    """With one label, only the first row is learned: the other task errs on all its 5 rows.

    1 mistake (learned) + 5 mistakes of the never-updated task = 6, in any order.
    """
    doc = protocols.get("split").run(split_stream(), "ipl", {}, runs=3, seed=1, budget=1)
    assert doc["metrics"]["queries_mean"] == 1
    assert doc["metrics"]["mistakes_mean"] == 6
    assert doc["budget"] == 1


def reference_online(dataset: Dataset, name: str, params: dict, runs: int, seed: int):
    """A plain loop: decision, mistake, query, learn — row by row, on the documented shuffles."""
    mistakes, queries = [], []
    for r in range(runs):
        order = np.random.default_rng([seed, r]).permutation(dataset.n)
        model = learners.make(
            name,
            n_features=dataset.n_features,
            n_tasks=dataset.n_tasks,
            seed=learner_seed(seed, r),
            **params,
        )
        wrong = used = 0
        for j in order:
            x, t, y = dataset.X[j], int(dataset.task[j]), float(dataset.y[j])
            score = model.decision_one(x, t)
            wrong += (1.0 if score >= 0 else -1.0) != y
            if model.query_one(x, t):
                model.learn_one(x, y, t)
                used += 1
        mistakes.append(wrong)
        queries.append(used)
    return np.mean(mistakes), np.mean(queries)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("cmtl", {}),  # passive: the chunked score_and_learn_many path
        ("ipl", {"append_bias": True, "l2_normalize": True}),
        ("random-query", {"query_rate": 0.4}),  # active: the row loop, learner's own draws
    ],
)
def test_online_protocol_equals_the_plain_loop(name, params):
    data = load_dataset("synthetic-rom:n=120,delta2=1")
    doc = protocols.get("online").run(data, name, params, runs=2, seed=3, budget=None)
    mistakes, queries = reference_online(data, name, params, runs=2, seed=3)
    assert doc["metrics"]["mistakes_mean"] == mistakes
    assert doc["metrics"]["queries_mean"] == queries


def test_active_learner_budget_is_passed_and_enforced():
    data = load_dataset("synthetic-saha")
    doc = protocols.get("split").run(
        data, "random-query", {"query_rate": 0.9}, runs=2, seed=0, budget=25
    )
    assert doc["metrics"]["queries_mean"] == 25
    assert doc["auto_params"] == {"budget": 25}
    assert doc["curve"]["queries_mean"][-1] == 25


def test_expected_rounds_is_set_to_the_training_rounds_when_the_learner_has_it():
    data = load_dataset("synthetic-saha")
    doc = protocols.get("split").run(data, "omtl-logdet", {}, runs=1, seed=0, budget=None)
    assert doc["auto_params"] == {"expected_rounds": 200}
    mine = protocols.get("online").run(
        data, "omtl-logdet", {"expected_rounds": 50}, runs=1, seed=0, budget=None
    )
    assert "auto_params" not in mine and mine["params"] == {"expected_rounds": 50}


def test_weight_correlation_is_the_corrcoef_of_the_task_weights():
    data = load_dataset("synthetic-saha")
    doc = protocols.get("split").run(data, "ipl", {}, runs=1, seed=0, budget=None)
    corr = np.array(doc["weight_correlation"])
    assert corr.shape == (3, 3)
    np.testing.assert_allclose(np.diag(corr), 1.0)
    np.testing.assert_allclose(corr, corr.T)
    assert corr[0, 1] < -0.5  # w1 = -w2 in the data
    np.testing.assert_array_equal(doc["relation_matrix"], np.eye(3))


def test_outlier_report_is_included_for_learners_that_have_one():
    data = load_dataset("synthetic-rom:n=100")
    doc = protocols.get("online").run(data, "rom-rda", {}, runs=1, seed=0, budget=None)
    assert len(doc["outlier_scores"]) == 5
    assert all(0 <= t < 5 for t in doc["outlier_tasks"])


def test_regression_reports_rmse():
    data = load_dataset("synthetic-ella:tasks=4,n=40")
    for name in ("online", "split"):
        doc = protocols.get(name).run(data, "ella", {}, runs=2, seed=0, budget=None)
        m = doc["metrics"]
        assert m["rmse_mean"] > 0 and m["neg_rmse_mean"] == -m["rmse_mean"]
        assert "accuracy_mean" not in m and "mistakes_mean" not in m


def test_kind_mismatch_and_unknown_protocol_are_errors():
    with pytest.raises(ValueError, match="regression"):
        protocols.get("split").run(
            load_dataset("synthetic-ella:tasks=2,n=10"), "ipl", {}, runs=1, seed=0, budget=None
        )
    with pytest.raises(ValueError, match="unknown protocol"):
        protocols.get("nope")
    assert {"online", "split"} <= set(protocols.available())


def test_aggregate_mean_std_and_t_interval():
    """[1, 2, 3]: mean 2, sample std 1, 95% CI half-width t_{0.975,2} / sqrt(3) = 4.3027 / 1.7321."""
    out = aggregate([{"m": 1.0}, {"m": 2.0}, {"m": 3.0}])
    assert out["m_mean"] == 2.0 and out["m_std"] == 1.0
    assert out["m_ci95"] == pytest.approx(2.4841377, rel=1e-6)


def test_auc_counts_ties_as_one_half():
    """Pairs (pos, neg): (0.35 > 0.1), (0.35 < 0.4), (0.8 > both), ties none: 3/4; a tie gives 1/2."""
    assert auc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([-1, -1, 1, 1])) == 0.75
    assert auc(np.array([0.5, 0.5]), np.array([-1, 1])) == 0.5


def test_learners_of_both_kinds_are_switched_to_the_dataset_kind():
    data = load_dataset("synthetic-saha")
    doc = protocols.get("split").run(data, "ella", {}, runs=1, seed=0, budget=None)
    assert doc["auto_params"] == {"base_learner": "logistic"}
    assert 0.5 < doc["metrics"]["accuracy_mean"] <= 1.0
