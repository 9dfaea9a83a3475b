"""Helpers shared by the evaluation protocols (and importable by new ones).

A protocol module (see :mod:`evaluation.protocols`) typically does::

    setup = LearnerSetup.create(dataset, learner, params, budget=budget)
    rows = RowSource(dataset)
    for run in range(runs):
        order = run_rng(seed, run)                      # the run's shuffles (same for all learners)
        model = setup.build(seed=learner_seed(seed, run), rounds=n_rounds)
        result = stream_pass(model, rows, indices, budget=budget)
        ...                                              # metrics per run with the functions below
    doc = build_document(...)                           # the JSON document of the protocol

Contents
--------
* :func:`run_rng`, :func:`learner_seed` — the per-run random streams. The
  shuffles and splits of run ``r`` depend only on ``(seed, r)``, so every
  learner evaluated with the same ``--seed`` sees the same data orders.
* :class:`LearnerSetup` — resolves a learner's parameters for a dataset:
  ``expected_rounds`` (set to the number of training rounds when the class has
  that parameter and the user did not set it), ``budget`` (passed when the
  class has a ``budget`` parameter) and, for learners of kind "both", the
  parameter value that makes them learn the dataset's kind (:func:`kind_switch`).
  Automatic choices are reported under ``auto_params``.
* :class:`RowSource` — the dataset's rows as canonical :class:`~learners.inputs.Vec`
  objects, built once.
* :func:`stream_pass` — one predict-then-learn pass (docs/algorithms.md Sec. 0): the
  score is taken before ``query_one``/``learn_one``; a mistake is counted on every
  round; the label is consumed only when ``query_one`` says so and the budget is
  not spent. Passive learners use ``score_and_learn_many`` in chunks (equal by
  the contract, much faster for mistake-driven learners).
* :func:`score_rows` — decision scores of fixed rows (test sets).
* :func:`mistake_figures`, :func:`accuracy_figures`, :func:`regression_metrics`,
  :func:`per_task_metrics`, :func:`auc` — the figures of one run.
* :func:`aggregate`, :func:`per_task_table`, :func:`mean_matrix` — mean,
  standard deviation (ddof = 1) and the 95% confidence half-width
  ``t_{0.975, R-1} * std / sqrt(R)`` over runs.
* :func:`learner_matrices` — relation matrix, weight correlation
  (``np.corrcoef`` of the ``task_weights()`` rows, saha2011 Table 2) and the
  outlier report of one trained learner.
* :func:`build_document` — the JSON document every protocol returns.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy import stats

import learners
from evaluation.dataset import Dataset
from learners.base import Learner, outlier_reporter
from learners.inputs import Batch, Vec

__all__ = [
    "LearnerSetup",
    "PassResult",
    "Progress",
    "RowSource",
    "aggregate",
    "auc",
    "build_document",
    "accuracy_figures",
    "jsonable",
    "kind_switch",
    "learner_matrices",
    "learner_seed",
    "mean_matrix",
    "mistake_figures",
    "per_task_metrics",
    "per_task_table",
    "predictions",
    "regression_metrics",
    "run_rng",
    "score_rows",
    "stream_pass",
    "weight_correlation",
]

Progress = Callable[[int, int], None]

#: Rows per ``score_and_learn_many`` call (the Perceptron batch path builds a chunk x chunk Gram matrix).
CHUNK = 128


# ------------------------------------------------------------------ randomness
def run_rng(seed: int, run: int) -> np.random.Generator:
    """The generator of run ``run``: split draw first, then the order permutation."""
    return np.random.default_rng([seed, run])


def learner_seed(seed: int, run: int) -> int:
    """The learner's own seed in run ``run`` (independent of the data orders)."""
    return int(np.random.default_rng([seed, run, 1]).integers(2**31 - 1))


# --------------------------------------------------------------- learner setup
@dataclass
class LearnerSetup:
    """A learner class with the user's parameters, resolved for one dataset."""

    name: str
    cls: type[Learner]
    params: dict[str, Any]
    budget: int | None
    n_features: int
    n_tasks: int
    auto: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(
        cls, dataset: Dataset, learner: str, params: dict[str, Any], *, budget: int | None
    ) -> LearnerSetup:
        """Check the learner suits the dataset and build one instance to validate ``params``."""
        klass = learners.get(learner)
        setup = cls(learner, klass, dict(params), budget, dataset.n_features, dataset.n_tasks)
        probe = setup.build(seed=0, rounds=max(1, dataset.n))
        if probe.label_kind != dataset.kind and klass.kind == "both":
            switch = kind_switch(klass, setup.params, dataset.kind)
            if switch is not None:
                setup.params.update(switch)
                setup.auto.update(switch)
                probe = setup.build(seed=0, rounds=max(1, dataset.n))
        if probe.label_kind != dataset.kind:
            hint = (
                "; this learner does both: set the hyperparameter that chooses (omtl learners)"
                if klass.kind == "both"
                else ""
            )
            raise ValueError(
                f"learner {learner!r} learns {probe.label_kind} but dataset {dataset.name!r} "
                f"is {dataset.kind}{hint}"
            )
        return setup

    def param_names(self) -> set[str]:
        """The hyperparameter names of the learner class."""
        return {p.name for p in self.cls.params}

    def resolved(self, rounds: int) -> dict[str, Any]:
        """The parameters to build with: the user's, plus ``expected_rounds`` and ``budget``."""
        out = dict(self.params)
        names = self.param_names()
        if "expected_rounds" in names and "expected_rounds" not in out:
            out["expected_rounds"] = int(rounds)
            self.auto["expected_rounds"] = int(rounds)
        if "budget" in names and self.budget is not None and "budget" not in out:
            out["budget"] = int(self.budget)
            self.auto["budget"] = int(self.budget)
        return out

    def build(self, *, seed: int, rounds: int) -> Learner:
        """A fresh learner for a pass of ``rounds`` training rounds."""
        return self.cls(
            n_features=self.n_features, n_tasks=self.n_tasks, seed=seed, **self.resolved(rounds)
        )


#: Values tried by :func:`kind_switch` for a string hyperparameter.
KIND_VALUES = ("logistic", "classification", "hinge", "linear", "regression", "squared")


def kind_switch(cls: type[Learner], given: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """For a learner of kind "both": the one string hyperparameter value giving ``kind``.

    Tries each string-valued parameter the user did not set with the usual names
    (:data:`KIND_VALUES`) and returns the first ``{name: value}`` whose instance
    learns ``kind`` (e.g. ELLA's ``base_learner="logistic"`` for classification),
    or None.
    """
    for param in cls.params:
        if param.name in given or not isinstance(param.default, str):
            continue
        for value in KIND_VALUES:
            try:
                probe = cls(n_features=2, n_tasks=2, seed=0, **given, **{param.name: value})
            except (ValueError, TypeError):
                continue
            if probe.label_kind == kind:
                return {param.name: value}
    return None


# ------------------------------------------------------------------- the rows
class RowSource:
    """A dataset's rows, with the canonical vectors built once (lazily)."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self._vecs: list[Vec] | None = None

    @property
    def vecs(self) -> list[Vec]:
        """Row ``i`` as a canonical :class:`Vec` (what ``as_vector`` would give)."""
        if self._vecs is None:
            self._vecs = Batch.from_input(self.dataset.X, self.dataset.n_features).rows()
        return self._vecs

    def block(self, idx: np.ndarray) -> np.ndarray | sp.csr_matrix:
        """The feature rows ``idx`` as a dense array or a CSR matrix."""
        X = self.dataset.X
        return sp.csr_matrix(X[idx]) if sp.issparse(X) else np.asarray(X[idx])


@dataclass
class PassResult:
    """What one predict-then-learn pass observed.

    ``scores[i]`` is the score of ``indices[i]`` before it was learned;
    ``consumed[i]`` is True when its label was used (queried and within budget).
    """

    indices: np.ndarray
    scores: np.ndarray
    consumed: np.ndarray

    @property
    def queries(self) -> int:
        """Labels actually consumed."""
        return int(self.consumed.sum())


def stream_pass(
    model: Learner,
    rows: RowSource,
    indices: np.ndarray,
    *,
    budget: int | None = None,
    checkpoints: Sequence[int] = (),
    at_checkpoint: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> PassResult:
    """One pass over ``indices`` in that order: score, then query, then learn.

    ``budget`` stops label consumption after that many labels (the learner's own
    ``budget`` parameter, when it has one, is set by :class:`LearnerSetup`).
    ``at_checkpoint(q)`` is called once the number of consumed labels first
    reaches each ``q`` in ``checkpoints`` (used for accuracy-vs-queries curves);
    ``progress(done)`` reports rows processed.
    """
    n = indices.shape[0]
    y = rows.dataset.y
    task = rows.dataset.task
    scores = np.empty(n)
    consumed = np.zeros(n, dtype=bool)
    marks = sorted({int(c) for c in checkpoints if c > 0})
    fire = _CheckpointFirer(marks, at_checkpoint)
    limit = n if budget is None else min(n, int(budget))
    if not model.is_active:
        start = 0
        while start < n:
            learn_end = min(limit, fire.next_mark(start))
            if start < learn_end:
                end = min(start + CHUNK, learn_end)
                idx = indices[start:end]
                scores[start:end] = model.score_and_learn_many(rows.block(idx), y[idx], task[idx])
                consumed[start:end] = True
                fire.reached(end)
            else:
                end = min(start + CHUNK, n)
                vecs = rows.vecs
                for i in range(start, end):
                    j = int(indices[i])
                    scores[i] = model.decision_one(vecs[j], int(task[j]))
            start = end
            if progress is not None:
                progress(end)
        return PassResult(indices, scores, consumed)
    vecs = rows.vecs
    used = 0
    for i, j in enumerate(indices.tolist()):
        v, t = vecs[j], int(task[j])
        scores[i] = model.decision_one(v, t)
        if used < limit and model.query_one(v, t):
            model.learn_one(v, float(y[j]), t)
            consumed[i] = True
            used += 1
            fire.reached(used)
        if progress is not None and (i + 1) % CHUNK == 0:
            progress(i + 1)
    if progress is not None:
        progress(n)
    return PassResult(indices, scores, consumed)


class _CheckpointFirer:
    """Calls ``callback(q)`` once per checkpoint ``q`` when the label count reaches it."""

    def __init__(self, marks: list[int], callback: Callable[[int], None] | None) -> None:
        self.marks = marks if callback is not None else []
        self.callback = callback
        self.pos = 0

    def next_mark(self, used: int) -> int:
        """The next checkpoint above ``used`` (a passive pass learns up to it, then stops)."""
        for mark in self.marks[self.pos :]:
            if mark > used:
                return mark
        return 1 << 62

    def reached(self, used: int) -> None:
        while self.pos < len(self.marks) and self.marks[self.pos] <= used:
            assert self.callback is not None
            self.callback(self.marks[self.pos])
            self.pos += 1


def score_rows(model: Learner, rows: RowSource, indices: np.ndarray) -> np.ndarray:
    """Scores of ``indices`` under the current model (``decision_one``, no learning)."""
    vecs, task = rows.vecs, rows.dataset.task
    return np.array([model.decision_one(vecs[j], int(task[j])) for j in indices.tolist()])


# --------------------------------------------------------------- run metrics
def predictions(scores: np.ndarray) -> np.ndarray:
    """``SGN(score)`` with ties -> +1 (docs/algorithms.md Sec. 0)."""
    return np.where(scores >= 0.0, 1.0, -1.0)


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney, ties count one half); NaN with one class."""
    pos = y > 0
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks = stats.rankdata(scores)
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def mistake_figures(scores: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Online figures of a pass: ``mistakes`` (count), ``mistake_rate`` and progressive ``auc``."""
    wrong = predictions(scores) != y
    return {
        "mistakes": float(wrong.sum()),
        "mistake_rate": float(wrong.mean()) if y.shape[0] else math.nan,
        "auc": auc(scores, y),
    }


def accuracy_figures(scores: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Test figures: ``accuracy`` of ``SGN(score)`` and ``auc``."""
    right = predictions(scores) == y
    return {
        "accuracy": float(right.mean()) if y.shape[0] else math.nan,
        "auc": auc(scores, y),
    }


def regression_metrics(scores: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Root mean squared error of ``scores`` against ``y`` (NaN for no rows)."""
    if y.shape[0] == 0:
        return {"rmse": math.nan}
    return {"rmse": float(np.sqrt(np.mean((scores - y) ** 2)))}


def per_task_metrics(
    task: np.ndarray,
    n_tasks: int,
    compute: Callable[[np.ndarray], dict[str, float]],
) -> list[dict[str, float]]:
    """``compute(mask)`` for every task's rows (a mask over the pass/test arrays)."""
    return [compute(task == k) for k in range(n_tasks)]


# ----------------------------------------------------------------- aggregation
def _ci95(std: float, runs: int) -> float:
    if runs < 2 or not math.isfinite(std):
        return 0.0 if runs == 1 else math.nan
    return float(stats.t.ppf(0.975, runs - 1) * std / math.sqrt(runs))


def aggregate(per_run: Sequence[dict[str, float]]) -> dict[str, float]:
    """``{m}_mean``, ``{m}_std`` (ddof = 1, 0 for one run) and ``{m}_ci95`` of every metric.

    NaN values (a metric undefined in a run, e.g. AUC of a task with one class)
    are left out of that metric's figures. For ``rmse`` also ``neg_rmse_mean``.
    """
    out: dict[str, float] = {}
    keys = list(dict.fromkeys(k for run in per_run for k in run))
    for key in keys:
        values = np.array([run.get(key, math.nan) for run in per_run], dtype=np.float64)
        values = values[np.isfinite(values)]
        r = int(values.shape[0])
        mean = float(values.mean()) if r else math.nan
        std = float(values.std(ddof=1)) if r > 1 else (0.0 if r == 1 else math.nan)
        out[f"{key}_mean"] = mean
        out[f"{key}_std"] = std
        out[f"{key}_ci95"] = _ci95(std, r)
    if "rmse_mean" in out:
        out["neg_rmse_mean"] = -out["rmse_mean"]
    return out


def per_task_table(
    task_names: Sequence[str], per_run: Sequence[Sequence[dict[str, float]]]
) -> list[dict[str, Any]]:
    """One entry per task: ``{"task": name, **aggregate(that task's runs)}``."""
    table: list[dict[str, Any]] = []
    for k, name in enumerate(task_names):
        entry: dict[str, Any] = {"task": name}
        entry.update(aggregate([run[k] for run in per_run]))
        table.append(entry)
    return table


def mean_matrix(matrices: Iterable[np.ndarray | None]) -> np.ndarray | None:
    """Element-wise mean of the matrices (NaN entries ignored); None when there are none."""
    stack = [m for m in matrices if m is not None]
    if not stack:
        return None
    arr = np.stack(stack)
    finite = np.isfinite(arr)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(finite, arr, 0.0).sum(axis=0) / finite.sum(axis=0)


# -------------------------------------------------------------- learner state
def weight_correlation(model: Learner) -> np.ndarray | None:
    """``np.corrcoef`` of the rows of ``task_weights()`` (saha2011 Table 2), or None."""
    weights = model.task_weights()
    if weights is None:
        return None
    W = np.asarray(weights, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] < 2 or W.shape[1] < 2:
        return None
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant rows give NaN entries
        return np.atleast_2d(np.corrcoef(W))


def learner_matrices(model: Learner) -> dict[str, Any]:
    """Relation matrix, weight correlation and (when offered) outlier report of ``model``."""
    out: dict[str, Any] = {
        "relation_matrix": model.relation_matrix(),
        "weight_correlation": weight_correlation(model),
    }
    reporter = outlier_reporter(model)
    if reporter is not None:
        out["outlier_scores"] = np.asarray(reporter.outlier_scores(), dtype=np.float64)
        out["outlier_tasks"] = [int(t) for t in reporter.outlier_tasks()]
    return out


# ------------------------------------------------------------------ document
def jsonable(value: Any) -> Any:
    """``value`` with arrays as lists and non-finite floats as None (strict JSON)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def build_document(
    *,
    dataset: Dataset,
    setup: LearnerSetup,
    protocol: str,
    runs: int,
    seed: int,
    budget: int | None,
    run_metrics: Sequence[dict[str, float]],
    run_per_task: Sequence[Sequence[dict[str, float]]],
    matrices: Sequence[dict[str, Any]],
    extras: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON document of one evaluation.

    ``relation_matrix`` and ``weight_correlation`` are the means over runs of the
    final matrices (``*_last`` hold the last run's); ``outlier_scores`` and
    ``outlier_tasks`` are the last run's.
    """
    doc: dict[str, Any] = {
        "dataset": dataset.name,
        "learner": setup.name,
        "params": setup.params,
        "protocol": protocol,
        "runs": runs,
        "seed": seed,
        "budget": budget,
        "kind": dataset.kind,
        "n_tasks": dataset.n_tasks,
        "n_features": dataset.n_features,
        "metrics": aggregate(run_metrics),
        "per_task": per_task_table(dataset.task_names, run_per_task),
        "relation_matrix": mean_matrix(m["relation_matrix"] for m in matrices),
        "weight_correlation": mean_matrix(m["weight_correlation"] for m in matrices),
    }
    if matrices:
        last = matrices[-1]
        doc["relation_matrix_last"] = last["relation_matrix"]
        doc["weight_correlation_last"] = last["weight_correlation"]
        for key in ("outlier_scores", "outlier_tasks"):
            if key in last:
                doc[key] = last[key]
    if setup.auto:
        doc["auto_params"] = dict(setup.auto)
    doc["description"] = dataset.description
    if extras:
        doc.update(extras)
    return jsonable(doc)
