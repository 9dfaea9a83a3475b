"""The label-efficiency part: test accuracy and AUC against the labels used.

On landmine19 and spam15, per run the dataset's split (the ``split`` protocol's:
drawn from ``run_rng(seed, r)``, training rows in a random order):

* our active learners through :func:`evaluation.protocols.split.run` with
  ``budget = B`` (they query by their own rule until ``B`` labels are used);
* VW passive on the first ``B`` rows of the shuffled training rows (a random
  sample of size ``B``), its configuration (layout, loss, step) tuned on a
  separate split with all labels, by test AUC;
* VW ``--active --simulation`` with the same configuration: VW sees every
  training row, asks for a label when its disagreement-based rule (importance
  weighted, with the ``--mellowness`` constant) says so, and learns only the
  labels it asked for; a row's label counts as used when VW kept its weight.
  Per run and budget the smallest mellowness of :data:`MELLOWNESS` whose pass
  reaches ``B`` labels is used (stopping there), else the largest.

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
from evaluation.common import accuracy_figures, run_rng
from evaluation.dataset import Dataset
from evaluation.params import parse_spec
from evaluation.protocols import split
from evaluation.splits import TEST, TRAIN

__all__ = ["FRACTIONS", "LabelSettings", "MELLOWNESS", "run_dataset"]

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


def _vw_point(
    config: PeerConfig, rows: PeerRows, train: np.ndarray, test: np.ndarray, budget: int
) -> dict[str, float]:
    used, scores = train_then_test(config, rows, train, test, budget)
    return {"labels": float(used), **accuracy_figures(scores, rows.dataset.y[test])}


def _vw_active_point(
    config: PeerConfig, rows: PeerRows, train: np.ndarray, test: np.ndarray, budget: int
) -> dict[str, float]:
    point: dict[str, float] = {}
    for m in MELLOWNESS:
        point = _vw_point(replace(config, mellowness=m), rows, train, test, budget)
        point["mellowness"] = m
        if point["labels"] >= budget:
            break
    return point


def _tune_vw(dataset: Dataset, rows: PeerRows, settings: LabelSettings) -> PeerConfig:
    train, test = _split(dataset, settings.seed + TUNING_SEED_OFFSET, 0)
    scored = [
        (_vw_point(c, rows, train, test, train.shape[0])["auc"], c)
        for c in vw_grid(settings.vw_rates)
    ]
    return max(scored, key=lambda sc: sc[0])[1]


def _summary(points: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("labels", "accuracy", "auc"):
        out[key] = mean_ci([p[key] for p in points])
    return out


def _ours(dataset: Dataset, spec: str, budget: int, settings: LabelSettings) -> dict[str, Any]:
    name, raw = parse_spec(spec)
    params: dict[str, Any] = {}
    for key, value in raw.items():
        params[key] = _literal(value)
    doc = split.run(dataset, name, params, runs=settings.runs, seed=settings.seed, budget=budget)
    m = doc["metrics"]
    return {
        key: {"mean": m[f"{src}_mean"], "ci95": m[f"{src}_ci95"], "runs": settings.runs}
        for key, src in (("labels", "queries"), ("accuracy", "accuracy"), ("auc", "auc"))
    }


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
    systems: dict[str, dict[float, dict[str, Any]]] = {"VW passive": {}, "VW --active": {}}
    for f, b in budgets.items():
        systems["VW passive"][f] = _summary(
            [_vw_point(config, rows, tr, te, b) for tr, te in splits]
        )
        systems["VW --active"][f] = _summary(
            [_vw_active_point(config, rows, tr, te, b) for tr, te in splits]
        )
    errors: dict[str, str] = {}
    for name in settings.learners:
        try:
            systems[name] = {f: _ours(dataset, name, b, settings) for f, b in budgets.items()}
        except Exception as exc:  # a learner that does not run here is reported, not fatal
            errors[name] = f"{type(exc).__name__}: {exc}"[:200]
        _log(f"   {name}: {errors.get(name, 'done')}")
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
