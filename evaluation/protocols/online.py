"""The ``online`` protocol: one predict-then-learn pass over all rows per run.

Each run shuffles every row of the dataset (the order depends only on
``(seed, run)``), and the learner predicts each row before it may learn it
(docs/algorithms.md Sec. 0). Reported per run, overall and per task:

* classification: ``mistakes`` and ``mistake_rate`` (saha2011 Table 5, zhang2018's
  cumulative error rate), the progressive ``auc`` of the scores, ``queries``
  (labels consumed; every row for a passive learner without ``--budget``);
* regression: the progressive ``rmse`` and ``queries``.

Extra key ``curve``: the cumulative mistake rate (regression: RMSE) at 50 points
along the stream, averaged over runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from evaluation.common import (
    LearnerSetup,
    RowSource,
    build_document,
    learner_matrices,
    learner_seed,
    mistake_figures,
    predictions,
    regression_metrics,
    run_rng,
    stream_pass,
)
from evaluation.dataset import Dataset

NAME = "online"

#: Points of the ``curve`` along the stream.
CURVE_POINTS = 50


def cumulative_curve(scores: np.ndarray, y: np.ndarray, kind: str, at: np.ndarray) -> np.ndarray:
    """Cumulative mistake rate (or RMSE) after ``at[i]`` rounds."""
    if kind == "regression":
        return np.sqrt(np.cumsum((scores - y) ** 2)[at - 1] / at)
    return np.cumsum(predictions(scores) != y)[at - 1] / at


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
    """Evaluate ``learner`` with the online protocol (see the module docstring)."""
    setup = LearnerSetup.create(dataset, learner, params, budget=budget)
    rows = RowSource(dataset)
    n, total = dataset.n, runs * dataset.n
    at = np.unique(np.linspace(1, n, min(CURVE_POINTS, n)).astype(np.int64))
    run_metrics, run_per_task, matrices, curves = [], [], [], []
    for r in range(runs):
        order = run_rng(seed, r).permutation(n)
        model = setup.build(seed=learner_seed(seed, r), rounds=n)
        report = None if progress is None else _offset(progress, r * n, total)
        result = stream_pass(model, rows, order, budget=budget, progress=report)
        y, task = dataset.y[order], dataset.task[order]

        def figures(mask: np.ndarray, result: Any = result, y: np.ndarray = y) -> dict[str, float]:
            if dataset.kind == "regression":
                out = regression_metrics(result.scores[mask], y[mask])
            else:
                out = mistake_figures(result.scores[mask], y[mask])
            out["queries"] = float(result.consumed[mask].sum())
            return out

        run_metrics.append(figures(np.ones(n, dtype=bool)))
        run_per_task.append([figures(task == k) for k in range(dataset.n_tasks)])
        matrices.append(learner_matrices(model))
        curves.append(cumulative_curve(result.scores, y, dataset.kind, at))
    key = "rmse_mean" if dataset.kind == "regression" else "mistake_rate_mean"
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
        extras={"curve": {"rounds": at, key: np.mean(curves, axis=0)}},
    )


def _offset(progress: Callable[[int, int], None], base: int, total: int) -> Callable[[int], None]:
    return lambda done: progress(base + done, total)
