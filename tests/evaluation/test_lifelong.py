"""The ``lifelong`` protocol (ruvolo2014 Evaluation Procedure) on small datasets."""

from __future__ import annotations

import json

import numpy as np
import pytest

import learners
from evaluation import protocols
from evaluation.catalog import load_dataset
from evaluation.dataset import Dataset
from evaluation.protocols import lifelong
from evaluation.splits import per_task_split

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
    "curve",
}


def _small_regression() -> Dataset:
    return load_dataset("synthetic-ella:tasks=6,n=30")


def _small_classification() -> Dataset:
    rng = np.random.default_rng(0)
    K, n, d = 4, 40, 3
    w = rng.normal(size=d)
    task = np.repeat(np.arange(K, dtype=np.int64), n)
    X = rng.normal(size=(K * n, d))
    W = w + 0.3 * rng.normal(size=(K, d))
    y = np.where(np.einsum("ij,ij->i", X, W[task]) > 0, 1.0, -1.0)
    return Dataset(
        name="tiny-classification",
        X=X,
        y=y,
        task=task,
        task_names=[f"t{k}" for k in range(K)],
        kind="classification",
        draw_split=per_task_split(task, 0.5),
    )


def test_the_protocol_is_discovered() -> None:
    assert protocols.get("lifelong") is lifelong


def test_regression_document_shape_and_curve() -> None:
    doc = lifelong.run(_small_regression(), "ella", {"k": 3}, runs=2, seed=0, budget=None)
    assert set(doc) >= KEYS
    assert doc["protocol"] == "lifelong" and doc["runs"] == 2
    curve = doc["curve"]
    assert list(curve) == ["tasks_learned", "neg_rmse_mean", "neg_rmse_std", "neg_rmse_ci95"]
    assert curve["tasks_learned"] == [1, 2, 3, 4, 5, 6]
    values = np.array(curve["neg_rmse_mean"])
    assert values.shape == (6,) and np.all(values < 0)
    assert values[-1] == pytest.approx(doc["metrics"]["neg_rmse_mean"])
    assert doc["metrics"]["curve_area_mean"] == pytest.approx(values.mean())
    assert len(doc["per_task"]) == 6
    assert np.array(doc["relation_matrix"]).shape == (6, 6)
    json.dumps(doc, allow_nan=False)


def test_classification_curve_is_auc() -> None:
    doc = lifelong.run(
        _small_classification(),
        "ella-svd",
        {"base_learner": "logistic", "k": 2},
        runs=1,
        seed=1,
        budget=None,
    )
    curve = doc["curve"]
    assert list(curve)[:2] == ["tasks_learned", "auc_mean"]
    auc = np.array(curve["auc_mean"])
    assert auc.shape == (4,) and np.all((auc >= 0) & (auc <= 1))
    assert auc[-1] == pytest.approx(doc["metrics"]["auc_mean"])
    assert auc[-1] > 0.8  # nearly separable related tasks
    assert {"auc_mean", "auc_pooled_mean", "accuracy_mean"} <= set(doc["metrics"])


def test_same_seed_same_document_and_different_seed_differs() -> None:
    data = _small_regression()
    a = lifelong.run(data, "ella-dual", {"k": 2}, runs=1, seed=5, budget=None)
    b = lifelong.run(data, "ella-dual", {"k": 2}, runs=1, seed=5, budget=None)
    c = lifelong.run(data, "ella-dual", {"k": 2}, runs=1, seed=6, budget=None)
    assert a["curve"] == b["curve"]
    assert a["curve"] != c["curve"]


def test_step_values_follow_the_paper_by_a_slow_reference() -> None:
    """Slow reference of one run: present the tasks in the protocol's order, each training half
    as one batch; after each step the mean over tasks of -RMSE, unseen tasks coded from the
    current basis by ``encode`` (row-by-row predictions, no vectorisation)."""
    from evaluation.common import learner_seed, run_rng
    from evaluation.splits import TEST, TRAIN

    data = _small_regression()
    doc = lifelong.run(data, "ella", {"k": 3}, runs=1, seed=2, budget=None)
    rng = run_rng(2, 0)
    split = data.split_for_run(rng)
    order = rng.permutation(data.n_tasks)
    model = learners.make(
        "ella", n_features=data.n_features, n_tasks=data.n_tasks, seed=learner_seed(2, 0), k=3
    )
    X = np.asarray(data.X)
    learned: set[int] = set()
    expected = []
    for t in order.tolist():
        train = (data.task == t) & (split == TRAIN)
        model.learn_many(X[train], data.y[train], t)
        learned.add(t)
        rmses = []
        for u in range(data.n_tasks):
            test = np.flatnonzero((data.task == u) & (split == TEST))
            if u in learned:
                pred = [model.decision_one(X[i], u) for i in test]
            else:
                fit = (data.task == u) & (split == TRAIN)
                _, w = model.encode(X[fit], data.y[fit])  # type: ignore[attr-defined]
                pred = [np.append(X[i], 1.0) @ w for i in test]
            rmses.append(np.sqrt(np.mean((np.array(pred) - data.y[test]) ** 2)))
        expected.append(-float(np.mean(rmses)))
    np.testing.assert_allclose(doc["curve"]["neg_rmse_mean"], expected, rtol=1e-9)


def test_curve_area_is_the_mean_of_each_runs_curve() -> None:
    """``curve_area`` per run is the mean of that run's steps; a step without a figure
    (NaN: no task with both classes in its test rows) is left out, not counted as zero."""
    data = _small_regression()
    one = lifelong.run(data, "ella", {"k": 2}, runs=1, seed=4, budget=None)
    assert one["metrics"]["curve_area_mean"] == pytest.approx(
        np.mean(one["curve"]["neg_rmse_mean"])
    )
    three = lifelong.run(data, "ella", {"k": 2}, runs=3, seed=4, budget=None)
    assert three["metrics"]["curve_area_mean"] == pytest.approx(
        np.mean(three["curve"]["neg_rmse_mean"])
    )
    assert three["metrics"]["curve_area_std"] > 0  # three runs, three different curves
    assert lifelong.curve_area(np.array([-2.0, np.nan, -1.0])) == pytest.approx(-1.5)
    assert np.isnan(lifelong.curve_area(np.array([np.nan, np.nan])))


def test_learners_without_encode_run_too() -> None:
    """A learner outside the ELLA family scores unseen tasks with its untrained model."""
    doc = lifelong.run(_small_classification(), "ipl", {}, runs=1, seed=0, budget=None)
    assert len(doc["curve"]["auc_mean"]) == 4


def test_kind_mismatch_is_refused() -> None:
    with pytest.raises(ValueError):
        lifelong.run(
            _small_regression(),
            "ella-svd",
            {"base_learner": "logistic"},
            runs=1,
            seed=0,
            budget=None,
        )
