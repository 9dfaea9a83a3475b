"""The ``multiview`` protocol: one test-then-train pass over rounds of K views.

For the learners of :mod:`learners.multiview` on a
:class:`~evaluation.multiview.MultiviewDataset` (docs/algorithms.md Secs. 0 and
1.5-1.6: every round reveals all K instances, the learner scores the round for
its task ``i_t``, then sees the label). Each run shuffles the rounds (the order
depends only on ``(seed, run)``, so every learner sees the same orders) and
feeds them through ``score_and_learn_views_many`` in chunks. Heterogeneous
views are zero-padded for learners without ``task_dims`` (inner products are
unchanged). The learners are passive: every label is consumed, ``budget`` must
be None.

Reported per run, overall and per task (the round's ``i_t``): ``mistakes``,
``mistake_rate``, the progressive ``auc`` and ``queries``. Extras: ``curve``
(the cumulative mistake rate at 50 points, averaged over runs),
``learner_mistakes`` (the learner's own update count, mean over runs) and
``view_dims``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import learners
from evaluation.common import (
    aggregate,
    jsonable,
    learner_matrices,
    learner_seed,
    mean_matrix,
    mistake_figures,
    per_task_table,
    run_rng,
)
from evaluation.multiview import MultiviewDataset
from evaluation.protocols.online import CURVE_POINTS, cumulative_curve

NAME = "multiview"
#: Rounds per call of ``score_and_learn_views_many``.
CHUNK = 1000


def build(
    dataset: MultiviewDataset, learner: str, params: dict[str, Any], seed: int
) -> tuple[Any, MultiviewDataset]:
    """The multiview learner for ``dataset`` (padded when it needs equal view dimensions)."""
    cls = learners.get(learner)
    if not getattr(cls, "multiview", False):
        raise ValueError(f"learner {learner!r} does not take multiview rounds")
    names = {p.name for p in cls.params}
    data = dataset
    extra: dict[str, Any] = {}
    if "task_dims" in names:
        extra["task_dims"] = dataset.view_dims
    elif not dataset.uniform:
        data = dataset.padded()
    model = cls(
        n_features=data.view_dims[0], n_tasks=data.n_tasks, seed=seed, **{**params, **extra}
    )
    return model, data


def run(
    dataset: Any,
    learner: str,
    params: dict[str, Any],
    *,
    runs: int,
    seed: int,
    budget: int | None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Evaluate ``learner`` on the multiview ``dataset`` (see the module docstring)."""
    if not isinstance(dataset, MultiviewDataset):
        raise ValueError(
            "the multiview protocol needs a multiview dataset (evaluation.multiview.load_multiview)"
        )
    if budget is not None:
        raise ValueError("the multiview learners are passive: budget must be None")
    n, total = dataset.n, runs * dataset.n
    at = np.unique(np.linspace(1, n, min(CURVE_POINTS, n)).astype(np.int64))
    run_metrics, run_per_task, matrices, curves, updates = [], [], [], [], []
    for r in range(runs):
        order = run_rng(seed, r).permutation(n)
        model, data = build(dataset, learner, params, learner_seed(seed, r))
        views, y, task = data.rounds(order)
        scores = np.empty(n)
        for lo in range(0, n, CHUNK):
            hi = min(n, lo + CHUNK)
            scores[lo:hi] = model.score_and_learn_views_many(
                [v[lo:hi] for v in views], y[lo:hi], task[lo:hi]
            )
            if progress is not None:
                progress(r * n + hi, total)

        def figures(
            mask: np.ndarray, scores: np.ndarray = scores, y: np.ndarray = y
        ) -> dict[str, float]:
            out = mistake_figures(scores[mask], y[mask])
            out["queries"] = float(mask.sum())
            return out

        run_metrics.append(figures(np.ones(n, dtype=bool)))
        run_per_task.append([figures(task == k) for k in range(dataset.n_tasks)])
        matrices.append(learner_matrices(model))
        curves.append(cumulative_curve(scores, y, "classification", at))
        updates.append(float(getattr(model, "n_mistakes_", np.nan)))
    doc: dict[str, Any] = {
        "dataset": dataset.name,
        "learner": learner,
        "params": params,
        "protocol": NAME,
        "runs": runs,
        "seed": seed,
        "budget": budget,
        "kind": "classification",
        "n_tasks": dataset.n_tasks,
        "view_dims": dataset.view_dims,
        "shared_label": dataset.shared_label,
        "metrics": aggregate(run_metrics),
        "per_task": per_task_table(dataset.view_names, run_per_task),
        "relation_matrix": mean_matrix(m["relation_matrix"] for m in matrices),
        "weight_correlation": mean_matrix(m["weight_correlation"] for m in matrices),
        "learner_mistakes": float(np.mean(updates)),
        "curve": {"rounds": at, "mistake_rate_mean": np.mean(curves, axis=0)},
        "description": dataset.description,
    }
    return jsonable(doc)
