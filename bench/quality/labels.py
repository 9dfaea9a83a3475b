"""The label-efficiency part: test accuracy and AUC against the labels used.

On landmine19 and spam15, per run the dataset's split (the ``split`` protocol's:
drawn from ``run_rng(seed, r)``, training rows in a random order):

* our active learners, one pass per run (:func:`evaluation.common.stream_pass`,
  the ``split`` protocol's pass) read when their consumed labels first reach
  each budget ``B`` (they query by their own rule);
* VW passive on the first ``B`` rows of the shuffled training rows (a random
  sample of size ``B``), its configuration (layout, loss, step) tuned on a
  separate split with all labels, by test AUC;
* VW ``--active --simulation`` with the same configuration: VW sees every
  training row, asks for a label when its disagreement-based rule (importance
  weighted, with the ``--mellowness`` constant) says so, and learns only the
  labels it asked for; a row's label counts as used when VW kept its weight.
  Per run and budget the smallest mellowness of :data:`MELLOWNESS` whose pass
  reaches ``B`` labels is used (read there), else the largest.

Budgets are fractions of the training rows (:data:`FRACTIONS`: 5, 10, 25, 50%
and more points for the AUC crossing). The crossing is the smallest budget at
which a learner's mean test AUC reaches VW passive's with every label.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bench.quality.peers import PeerConfig, PeerRows, train_then_test, vw_grid
from bench.quality.stats import mean_ci
from evaluation.catalog import load_dataset
from evaluation.common import (
    LearnerSetup,
    RowSource,
    accuracy_figures,
    learner_seed,
    run_rng,
    score_rows,
    stream_pass,
)
from evaluation.dataset import Dataset
from evaluation.params import parse_spec
from evaluation.splits import TEST, TRAIN

__all__ = ["FRACTIONS", "MELLOWNESS", "LabelSettings", "crossing", "our_points", "run_dataset"]

#: Budgets as fractions of the training rows; the first four are the issue's.
FRACTIONS = (0.05, 0.1, 0.25, 0.5, 0.15, 0.2, 1 / 3, 0.75, 1.0)
#: VW ``--mellowness`` values tried for ``--active`` (smaller asks for fewer labels).
MELLOWNESS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)
#: Offset of the seed of the split VW is tuned on.
TUNING_SEED_OFFSET = 2_000_003


@dataclass(frozen=True)
class LabelSettings:
    """What one label-efficiency run measures."""

    learners: Sequence[str]
    runs: int = 10
    seed: int = 0
    vw_rates: tuple[float, ...] = (0.1, 0.5, 2.0)
    fractions: tuple[float, ...] = FRACTIONS


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _split(dataset: Dataset, seed: int, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Training rows (in pass order) and test rows of run ``r`` (as the split protocol)."""
    rng = run_rng(seed, r)
    s = dataset.split_for_run(rng)
    return rng.permutation(np.flatnonzero(s == TRAIN)), np.flatnonzero(s == TEST)


Points = list[dict[str, float]]  # one per budget: labels used, accuracy, auc


def _vw_points(
    config: PeerConfig, rows: PeerRows, train: np.ndarray, test: np.ndarray, budgets: list[int]
) -> Points:
    y = rows.dataset.y[test]
    return [
        {"labels": float(used), **accuracy_figures(scores, y)}
        for used, scores in train_then_test(config, rows, train, test, budgets)
    ]


def _vw_active_points(
    config: PeerConfig, rows: PeerRows, train: np.ndarray, test: np.ndarray, budgets: list[int]
) -> Points:
    """Per budget, the smallest mellowness whose pass reaches it (else the largest)."""
    passes = [
        _vw_points(replace(config, mellowness=m), rows, train, test, budgets) for m in MELLOWNESS
    ]
    out = []
    for k, budget in enumerate(budgets):
        m = next((j for j, pts in enumerate(passes) if pts[k]["labels"] >= budget), -1)
        out.append({**passes[m][k], "mellowness": MELLOWNESS[m]})
    return out


def _tune_vw(dataset: Dataset, rows: PeerRows, settings: LabelSettings) -> PeerConfig:
    train, test = _split(dataset, settings.seed + TUNING_SEED_OFFSET, 0)
    scored = [
        (_vw_points(c, rows, train, test, [train.shape[0]])[0]["auc"], c)
        for c in vw_grid(settings.vw_rates)
    ]
    return max(scored, key=lambda sc: sc[0])[1]


def our_points(
    setup: LearnerSetup,
    source: RowSource,
    train: np.ndarray,
    test: np.ndarray,
    budgets: list[int],
    seed: int,
) -> Points:
    """One pass over ``train``; the model read when its consumed labels first reach each budget.

    Equal to a pass with that budget for a learner whose query rule does not look
    at the budget (the learners here: the budget only stops the queries). A budget
    the learner never reaches gets its final model and label count.
    """
    model = setup.build(seed=seed, rounds=int(train.shape[0]))
    y = source.dataset.y[test]
    found: dict[int, dict[str, float]] = {}

    def read(q: int) -> None:
        found[q] = {"labels": float(q), **accuracy_figures(score_rows(model, source, test), y)}

    result = stream_pass(model, source, train, checkpoints=budgets, at_checkpoint=read)
    final = {
        "labels": float(result.queries),
        **accuracy_figures(score_rows(model, source, test), y),
    }
    return [found.get(b, final) for b in budgets]


def _summaries(per_run: list[Points], fractions: list[float]) -> dict[float, dict[str, Any]]:
    """Mean and 95% CI over runs of every figure, per budget."""
    return {
        f: {key: mean_ci([run[k][key] for run in per_run]) for key in ("labels", "accuracy", "auc")}
        for k, f in enumerate(fractions)
    }


def _spec_params(spec: str) -> tuple[str, dict[str, Any]]:
    name, raw = parse_spec(spec)
    return name, {key: _literal(value) for key, value in raw.items()}


def _literal(value: str) -> Any:
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(value.lower(), value)


def crossing(curve: dict[float, dict[str, Any]], target: float) -> float | None:
    """Smallest budget fraction whose mean AUC reaches ``target`` (None if none does)."""
    hits = [f for f, point in sorted(curve.items()) if point["auc"]["mean"] >= target]
    return hits[0] if hits else None


def run_dataset(spec: str, settings: LabelSettings) -> dict[str, Any]:
    """The curves of every system on one dataset; the JSON entry of the dataset."""
    dataset = load_dataset(spec)
    rows = PeerRows(dataset)
    splits = [_split(dataset, settings.seed, r) for r in range(settings.runs)]
    n_train = int(splits[0][0].shape[0])
    fractions = sorted(set(settings.fractions))
    budgets = {f: max(1, round(f * n_train)) for f in fractions}
    _log(f"== labels {spec}: {n_train} training rows, budgets {sorted(budgets.values())}")
    config = _tune_vw(dataset, rows, settings)
    _log(f"   VW tuned on a separate split: {config.vw_args()}")
    marks = [budgets[f] for f in fractions]
    systems = {
        "VW passive": _summaries(
            [_vw_points(config, rows, tr, te, marks) for tr, te in splits], fractions
        ),
        "VW --active": _summaries(
            [_vw_active_points(config, rows, tr, te, marks) for tr, te in splits], fractions
        ),
    }
    source = RowSource(dataset)
    errors: dict[str, str] = {}
    for spec_ in settings.learners:
        try:
            name, params = _spec_params(spec_)
            setup = LearnerSetup.create(dataset, name, params, budget=None)
            per_run = [
                our_points(setup, source, tr, te, marks, learner_seed(settings.seed, r))
                for r, (tr, te) in enumerate(splits)
            ]
            systems[spec_] = _summaries(per_run, fractions)
        except Exception as exc:  # a learner that does not run here is reported, not fatal
            errors[spec_] = f"{type(exc).__name__}: {exc}"[:200]
        _log(f"   {spec_}: {errors.get(spec_, 'done')}")
    target = systems["VW passive"][1.0]["auc"]["mean"] if 1.0 in budgets else float("nan")
    reach = {
        name: crossing(curve, target)
        for name, curve in systems.items()
        if name not in ("VW passive", "VW --active")
    }
    return {
        "dataset": spec,
        "description": dataset.description,
        "train_rows": n_train,
        "runs": settings.runs,
        "budgets": {str(f): b for f, b in budgets.items()},
        "vw_config": config.vw_args(),
        "vw_all_labels_auc": target,
        "systems": {n: {str(f): p for f, p in c.items()} for n, c in systems.items()},
        "reaches_vw_all_labels_auc_at": reach,
        "errors": errors,
    }
