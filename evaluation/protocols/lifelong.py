"""The ``lifelong`` protocol: tasks arrive one at a time (ruvolo2014, Evaluation Procedure).

Per run (its randomness from ``(seed, run)``, so every learner sees the same data):

1. the dataset's split (ruvolo2014 uses 50/50 within each task: the default of
   ``synthetic-ella`` and ``landmine``; use ``school:train=0.5`` for the schools);
2. a random order of the tasks;
3. for each task in that order, all its training rows as **one batch**
   (``learn_many``; for the ELLA family this is one refresh of the task: one code
   update and one basis update);
4. after each task, every task is scored on its test rows: tasks already learned
   with their current model; tasks not learned yet with a model fitted from the
   current basis to their training rows, without changing the learner (the ELLA
   family's ``single_task_fit`` once per run, then ``codes_for`` over the current
   basis at every step, as ``encode`` does; other learners score unseen tasks with
   their untrained model).

The performance after a step is the **mean over tasks** of the per-task figure:
``-RMSE`` for regression, AUC for classification (tasks whose test rows hold one
class only are left out of the mean). Extra key ``curve``:
``{"tasks_learned": [1..T], "<figure>_mean": [...], "<figure>_std": [...],
"<figure>_ci95": [...]}`` with ``<figure>`` ``neg_rmse`` or ``auc``, one value per
step, averaged over runs (higher is better), as in ruvolo2014 Fig. 2.

Final ``metrics`` (after the last task): regression ``rmse`` (mean over tasks of
the per-task RMSE; ``neg_rmse_mean`` is its negation) and ``rmse_pooled`` (over all
test rows); classification ``auc`` (mean over tasks), ``auc_pooled`` and
``accuracy`` (pooled). ``per_task`` holds the final per-task figures.

``curve_area`` (both kinds) is the normalised area under the run's learning curve:
the mean over the T steps of the step figure (-RMSE or AUC; higher is better;
steps without a figure are left out). It weighs how fast a learner gets good as well
as where it ends, and is the figure maximised by the "area" reading of ruvolo2014's
hyperparameter selection ("the average performance when learning using all tasks").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from evaluation.common import (
    LearnerSetup,
    RowSource,
    accuracy_figures,
    aggregate,
    auc,
    build_document,
    learner_matrices,
    learner_seed,
    regression_metrics,
    run_rng,
)
from evaluation.dataset import Dataset
from evaluation.splits import TEST, TRAIN
from learners.base import Learner
from learners.inputs import Batch

NAME = "lifelong"

__all__ = ["NAME", "run"]


class TaskRows:
    """The training and test rows of every task in one run."""

    def __init__(self, dataset: Dataset, split: np.ndarray) -> None:
        self.dataset = dataset
        self.source = RowSource(dataset)
        self.train = [
            np.flatnonzero((dataset.task == t) & (split == TRAIN)) for t in range(dataset.n_tasks)
        ]
        self.test = [
            np.flatnonzero((dataset.task == t) & (split == TEST)) for t in range(dataset.n_tasks)
        ]
        self.block = self.source.block

    def train_xy(self, t: int) -> tuple[Any, np.ndarray]:
        """Task ``t``'s training features and labels."""
        return self.block(self.train[t]), self.dataset.y[self.train[t]]


class Scorer:
    """Test scores of every task under the current learner, vectorised when possible.

    With ``task_weights()`` available the test rows are preprocessed once as the
    learner does (``append_bias``, ``l2_normalize``) and scored by one product per
    task; otherwise ``decision_one`` is called row by row.
    """

    def __init__(self, model: Learner, rows: TaskRows) -> None:
        self.model = model
        self.rows = rows
        d = rows.dataset.n_features
        self.features = [
            Batch.from_input(rows.block(idx), d)
            .preprocessed(
                bool(model.hyper.get("append_bias", False)),
                bool(model.hyper.get("l2_normalize", False)),
            )
            .to_dense()
            for idx in rows.test
        ]
        fit = getattr(model, "single_task_fit", None)
        self.fits: tuple[np.ndarray, np.ndarray] | None = None
        if fit is not None:
            pairs = [fit(*rows.train_xy(t)) for t in range(len(rows.test))]
            self.fits = (np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs]))

    def scores(self, learned: set[int]) -> list[np.ndarray]:
        """Test scores of every task; unseen tasks fitted from the current basis."""
        weights = self.model.task_weights()
        unseen = [t for t in range(len(self.features)) if t not in learned]
        coded: dict[int, np.ndarray] = {}
        if self.fits is not None and unseen:
            thetas, Ds = self.fits
            codes = self.model.codes_for(thetas[unseen], Ds[unseen])  # type: ignore[attr-defined]
            basis = self.model.basis()  # type: ignore[attr-defined]
            coded = dict(zip(unseen, codes @ basis.T, strict=True))
        out = []
        for t, X in enumerate(self.features):
            if t in coded:
                out.append(X @ coded[t])
            elif weights is not None:
                out.append(X @ weights[t])
            else:
                vecs = self.rows.source.vecs
                out.append(
                    np.array([self.model.decision_one(vecs[j], t) for j in self.rows.test[t]])
                )
        return out


def task_figures(kind: str, scores: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """One task's test figures: ``rmse``, or ``auc`` and ``accuracy``."""
    if kind == "regression":
        return regression_metrics(scores, y)
    return accuracy_figures(scores, y)


def step_performance(kind: str, per_task: list[dict[str, float]]) -> float:
    """Mean over tasks of ``-rmse`` (regression) or ``auc`` (classification), NaNs left out."""
    key = "rmse" if kind == "regression" else "auc"
    values = np.array([f[key] for f in per_task], dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return math.nan
    mean = float(values.mean())
    return -mean if kind == "regression" else mean


def final_figures(
    kind: str, per_task: list[dict[str, float]], scores: list[np.ndarray], ys: list[np.ndarray]
) -> dict[str, float]:
    """The run's final metrics (see the module docstring)."""
    all_scores, all_y = np.concatenate(scores), np.concatenate(ys)
    if kind == "regression":
        rmse = np.array([f["rmse"] for f in per_task])
        return {
            "rmse": float(np.nanmean(rmse)),
            "rmse_pooled": regression_metrics(all_scores, all_y)["rmse"],
        }
    aucs = np.array([f["auc"] for f in per_task])
    finite = aucs[np.isfinite(aucs)]
    pooled = accuracy_figures(all_scores, all_y)
    return {
        "auc": float(finite.mean()) if finite.size else math.nan,
        "auc_pooled": auc(all_scores, all_y),
        "accuracy": pooled["accuracy"],
    }


def curve_area(curve: np.ndarray) -> float:
    """The mean of one run's learning curve over its steps, NaN steps left out."""
    finite = curve[np.isfinite(curve)]
    return float(finite.mean()) if finite.size else math.nan


def run(
    dataset: Dataset,
    learner: str,
    params: dict[str, Any],
    *,
    runs: int,
    seed: int,
    budget: int | None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Evaluate ``learner`` with the lifelong protocol (see the module docstring)."""
    setup = LearnerSetup.create(dataset, learner, params, budget=budget)
    kind, K = dataset.kind, dataset.n_tasks
    figure = "neg_rmse" if kind == "regression" else "auc"
    curves = np.empty((runs, K))
    run_metrics, run_per_task, matrices = [], [], []
    for r in range(runs):
        rng = run_rng(seed, r)
        rows = TaskRows(dataset, dataset.split_for_run(rng))
        order = rng.permutation(K)
        n_train = int(sum(idx.size for idx in rows.train))
        model = setup.build(seed=learner_seed(seed, r), rounds=n_train)
        scorer = Scorer(model, rows)
        ys = [dataset.y[idx] for idx in rows.test]
        learned: set[int] = set()
        per_task: list[dict[str, float]] = []
        scores: list[np.ndarray] = []
        for step, t in enumerate(order.tolist()):
            X, y = rows.train_xy(t)
            if y.shape[0]:
                model.learn_many(X, y, t)
            learned.add(t)
            scores = scorer.scores(learned)
            per_task = [task_figures(kind, s, yt) for s, yt in zip(scores, ys, strict=True)]
            curves[r, step] = step_performance(kind, per_task)
            if progress is not None:
                progress(r * K + step + 1, runs * K)
        run_metrics.append(
            {**final_figures(kind, per_task, scores, ys), "curve_area": curve_area(curves[r])}
        )
        run_per_task.append(per_task)
        matrices.append(learner_matrices(model))
    steps = [aggregate([{figure: float(v)} for v in column]) for column in curves.T]
    curve = {
        "tasks_learned": list(range(1, K + 1)),
        f"{figure}_mean": [s[f"{figure}_mean"] for s in steps],
        f"{figure}_std": [s[f"{figure}_std"] for s in steps],
        f"{figure}_ci95": [s[f"{figure}_ci95"] for s in steps],
    }
    return build_document(
        dataset=dataset,
        setup=setup,
        protocol=NAME,
        runs=runs,
        seed=seed,
        budget=budget,
        run_metrics=run_metrics,
        run_per_task=run_per_task,
        matrices=matrices,
        extras={"curve": curve, "task_order_last": order},
    )
