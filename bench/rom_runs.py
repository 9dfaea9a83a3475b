"""Shared pieces of the ROM benchmarks: dataset specs and replays of the online protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.catalog import load_dataset
from evaluation.common import LearnerSetup, RowSource, learner_seed, run_rng, stream_pass

__all__ = ["Replay", "dataset", "replay", "spec"]

_DATA: dict[str, Any] = {}


def spec(delta2: float, data_seed: int | None = None) -> str:
    """The dataset spec of ``synthetic-rom`` for one delta^2 (reporting instance by default)."""
    base = f"synthetic-rom:delta2={delta2:g}"
    return base if data_seed is None else f"{base},seed={data_seed}"


def dataset(name: str) -> Any:
    """Load (once per process) the dataset ``name``."""
    if name not in _DATA:
        _DATA[name] = load_dataset(name)
    return _DATA[name]


@dataclass
class Replay:
    """Flags and errors of ``runs`` online-protocol runs of one learner."""

    flag_sets: list[list[int]]
    overall_error: list[float]
    task_error: list[list[float]]

    def flag_counts(self, n_tasks: int) -> list[int]:
        """In how many runs each task ended flagged."""
        counts = np.zeros(n_tasks, dtype=int)
        for flagged in self.flag_sets:
            counts[flagged] += 1
        return [int(c) for c in counts]


def replay(
    delta2: float,
    learner: str,
    params: dict[str, Any],
    *,
    data_seed: int | None,
    seed: int,
    runs: int,
) -> Replay:
    """The runs of ``omtl evaluate --protocol online --seed SEED`` (same orders and learner
    seeds), keeping each run's final ``outlier_tasks()``."""
    data = dataset(spec(delta2, data_seed))
    setup = LearnerSetup.create(data, learner, params, budget=None)
    rows = RowSource(data)
    out = Replay([], [], [])
    for r in range(runs):
        order = run_rng(seed, r).permutation(data.n)
        model = setup.build(seed=learner_seed(seed, r), rounds=data.n)
        result = stream_pass(model, rows, order)
        wrong = np.where(result.scores >= 0.0, 1.0, -1.0) != data.y[order]
        task = data.task[order]
        out.flag_sets.append(list(model.outlier_tasks()))  # type: ignore[attr-defined]
        out.overall_error.append(float(wrong.mean()))
        out.task_error.append([float(wrong[task == k].mean()) for k in range(data.n_tasks)])
    return out
