"""A separate, declared stage: calibrating gamma of the ROM learners for outlier detection.

The table's hyperparameters are selected by error alone, and the error is nearly
flat in gamma while the outlier flags are not. So this stage asks a different
question: is there a gamma for which the group lasso flags exactly the outlier?

Protocol. The other hyperparameters stay at their error-selected values for each
delta^2. gamma runs over a fine log grid on the *tuning instance* (dataset seed 1,
3 shuffles with --seed 1), where the truth is known by construction: task 5
(index 4) is the outlier at delta^2 = 12.25 and there is none at delta^2 = 0.09
(delta^2 = 1.00 is left out: whether it is an outlier there is a matter of
degree). The gamma with the most runs whose flagged set is exactly right
(ties: lower mean tuning error) is then run on the *reporting instance* (dataset
seed 0, the table's 10 shuffles). The threshold stays ``outlier_threshold = 0``.
"""

from __future__ import annotations

from multiprocessing import Pool
from typing import Any

import numpy as np

from bench.rom_runs import replay

__all__ = ["DETECT_GAMMAS", "EXPECTED", "calibrate", "report"]

DETECT_GAMMAS: dict[str, tuple[float, ...]] = {
    "rom-rda": tuple(float(g) for g in np.round(np.logspace(-1.0, 0.5, 16), 4)),
    "rom-pgd": tuple(float(g) for g in np.round(np.logspace(0.0, 1.5, 16), 3)),
}
EXPECTED: dict[float, list[int]] = {0.09: [], 12.25: [4]}
TUNE_RUNS = 3


def _sweep_point(job: tuple[str, float, float, dict[str, Any]]) -> dict[str, Any]:
    learner, gamma, delta2, params = job
    rep = replay(delta2, learner, {**params, "gamma": gamma}, data_seed=1, seed=1, runs=TUNE_RUNS)
    return {
        "learner": learner,
        "gamma": gamma,
        "delta2": delta2,
        "exact": sum(sorted(f) == EXPECTED[delta2] for f in rep.flag_sets),
        "flag_counts": rep.flag_counts(5),
        "error": float(np.mean(rep.overall_error)),
    }


def calibrate(selected: dict[float, dict[str, dict[str, Any]]], jobs: int) -> dict[str, Any]:
    """``selected[delta2][learner]`` are the error-selected parameters; returns, per learner,
    the sweep and the chosen gamma."""
    work = [
        (learner, g, d, selected[d][learner])
        for learner, gammas in DETECT_GAMMAS.items()
        for g in gammas
        for d in EXPECTED
    ]
    with Pool(jobs) as pool:
        sweep = pool.map(_sweep_point, work)
    out: dict[str, Any] = {}
    for learner, gammas in DETECT_GAMMAS.items():
        rows = [s for s in sweep if s["learner"] == learner]

        def merit(g: float, rows: list[dict[str, Any]] = rows) -> tuple[int, float]:
            mine = [s for s in rows if s["gamma"] == g]
            return (-sum(s["exact"] for s in mine), float(np.mean([s["error"] for s in mine])))

        best = min(gammas, key=merit)
        out[learner] = {
            "gamma": best,
            "exact_runs": -merit(best)[0],
            "of_runs": TUNE_RUNS * len(EXPECTED),
            "sweep": rows,
        }
    return out


def report(
    selected: dict[float, dict[str, dict[str, Any]]],
    calibrated: dict[str, Any],
    delta2s: tuple[float, ...],
    runs: int,
) -> list[dict[str, Any]]:
    """Flags and errors at the calibrated gamma on the reporting instance."""
    out = []
    for learner, cal in calibrated.items():
        for d in delta2s:
            params = {**selected[d][learner], "gamma": cal["gamma"]}
            rep = replay(d, learner, params, data_seed=None, seed=0, runs=runs)
            out.append(
                {
                    "learner": learner,
                    "delta2": d,
                    "params": params,
                    "flag_counts": rep.flag_counts(5),
                    "last_run_flags": rep.flag_sets[-1],
                    "overall_error": 100 * float(np.mean(rep.overall_error)),
                    "task_error": [100 * float(e) for e in np.mean(rep.task_error, axis=0)],
                }
            )
    return out
