"""The ``split`` protocol: one pass over the training split, then test accuracy.

Per run: the dataset's split (fixed, or the paper's split drawn afresh from
``(seed, run)``), a random order of the training rows, one predict-then-learn
pass over them (online mistakes counted on every round, labels consumed only
when the learner queries them and the budget allows: docs/algorithms.md Sec. 0), then
the final model scores the test rows (saha2011 Table 3, xu2018 Table 1).
Reported overall and per task:

* classification: test ``accuracy`` and ``auc``; ``mistakes`` and
  ``mistake_rate`` of the training pass; ``queries`` (labels consumed);
* regression: test ``rmse`` (and ``neg_rmse``), ``train_rmse`` of the
  progressive training predictions, ``queries``.

Extra key ``curve``: test accuracy (RMSE) when the consumed labels first reach
each of a few counts (xu2018 Fig. 1, accuracy against queries), averaged over
runs; a run that never reaches a count contributes its final figure there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.common import (
    LearnerSetup,
    PassResult,
    RowSource,
    accuracy_figures,
    build_document,
    learner_matrices,
    learner_seed,
    mistake_figures,
    regression_metrics,
    run_rng,
    score_rows,
    stream_pass,
)
from evaluation.dataset import Dataset
from evaluation.splits import TEST, TRAIN

NAME = "split"

#: Fractions of the training rows at which the accuracy-vs-queries curve is taken.
CURVE_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)


def query_checkpoints(n_train: int, budget: int | None) -> list[int]:
    """Label counts of the accuracy-vs-queries curve (capped at the budget)."""
    cap = n_train if budget is None else min(n_train, budget)
    marks = {max(1, round(f * n_train)) for f in CURVE_FRACTIONS}
    return sorted({m for m in marks if m <= cap} | {cap})


@dataclass
class SplitRun:
    """The rows of one run: training rows in pass order, and test rows."""

    dataset: Dataset
    train: np.ndarray
    test: np.ndarray

    def test_figures(self, scores: np.ndarray, task: int | None = None) -> dict[str, float]:
        """Test figures of ``scores`` (over all test rows, or one task's)."""
        mask = slice(None) if task is None else self.dataset.task[self.test] == task
        y = self.dataset.y[self.test][mask]
        if self.dataset.kind == "regression":
            return regression_metrics(scores[mask], y)
        return accuracy_figures(scores[mask], y)

    def figures(
        self, result: PassResult, test_scores: np.ndarray, task: int | None = None
    ) -> dict[str, float]:
        """All figures of the run (or of one task)."""
        mask = slice(None) if task is None else self.dataset.task[self.train] == task
        y = self.dataset.y[self.train][mask]
        out = self.test_figures(test_scores, task)
        if self.dataset.kind == "regression":
            out["train_rmse"] = regression_metrics(result.scores[mask], y)["rmse"]
        else:
            online = mistake_figures(result.scores[mask], y)
            out["mistakes"] = online["mistakes"]
            out["mistake_rate"] = online["mistake_rate"]
        out["queries"] = float(result.consumed[mask].sum())
        return out


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
    """Evaluate ``learner`` with the split protocol (see the module docstring)."""
    setup = LearnerSetup.create(dataset, learner, params, budget=budget)
    rows = RowSource(dataset)
    main = "rmse" if dataset.kind == "regression" else "accuracy"
    run_metrics, run_per_task, matrices = [], [], []
    curve_queries, curve_values = [], []
    done = 0
    for r in range(runs):
        rng = run_rng(seed, r)
        split = dataset.split_for_run(rng)
        this = SplitRun(
            dataset, rng.permutation(np.flatnonzero(split == TRAIN)), np.flatnonzero(split == TEST)
        )
        if this.train.size == 0 or this.test.size == 0:
            raise ValueError(f"dataset {dataset.name!r}: the split leaves no training or test rows")
        n_train = int(this.train.size)
        model = setup.build(seed=learner_seed(seed, r), rounds=n_train)
        marks = query_checkpoints(n_train, budget)
        reached: dict[int, float] = {}

        def checkpoint(
            q: int, model: Any = model, this: SplitRun = this, reached: dict[int, float] = reached
        ) -> None:
            reached[q] = this.test_figures(score_rows(model, rows, this.test))[main]

        report = None
        if progress is not None:
            total = runs * n_train

            def report(k: int, base: int = done, total: int = total) -> None:
                progress(base + k, total)

        result = stream_pass(
            model,
            rows,
            this.train,
            budget=budget,
            checkpoints=marks,
            at_checkpoint=checkpoint,
            progress=report,
        )
        done += n_train
        test_scores = score_rows(model, rows, this.test)
        run_metrics.append(this.figures(result, test_scores))
        run_per_task.append([this.figures(result, test_scores, k) for k in range(dataset.n_tasks)])
        matrices.append(learner_matrices(model))
        curve_queries.append([min(q, result.queries) for q in marks])
        curve_values.append([reached.get(q, run_metrics[-1][main]) for q in marks])
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
        extras={
            "curve": {
                "queries_mean": np.mean(curve_queries, axis=0),
                f"{main}_mean": np.mean(curve_values, axis=0),
            }
        },
    )
