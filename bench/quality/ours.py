"""Our learners on a stream: which ones run, their tuning grids, one isolated pass.

Learners are picked by registry name. The tuning grid of a learner is its
defaults plus, for the first hyperparameter it has among :data:`STEP_PARAMS`
(a step size, aggressiveness or regularisation weight), that value times 0.1
and 10 — so a learner family added later is tuned without touching this file.
Every pass runs in a forked child (:func:`bench.perf.throughput_ours.call_isolated`:
a memory limit and a time limit), so a learner whose state does not fit, or that
is too slow for the stream, is reported as such.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import learners
from bench.perf.throughput_ours import ALARM_GRACE, call_isolated
from evaluation.common import LearnerSetup, RowSource, predictions, stream_pass
from evaluation.dataset import Dataset

__all__ = ["STEP_PARAMS", "default_learner", "learner_grid", "passive_learners", "run_pass"]

#: Hyperparameters tuned by a factor of 10 either way (the first one a learner has).
STEP_PARAMS = ("eta", "lr", "learning_rate", "r", "C", "b", "kappa", "lam", "mu", "a")
#: Families that need inputs these streams do not have (views of the features).
NEEDS_VIEWS = ("multiview-", "mmperc", "matrix-pnorm")


def passive_learners() -> list[str]:
    """Registered passive classification learners that take a plain multitask stream."""
    out = []
    for info in learners.available():
        if info.active or info.name.startswith(NEEDS_VIEWS):
            continue
        out.append(info.name)
    return out


def default_learner() -> str:
    """The service's default, ``adaptive-auto`` (online selection over configurations and
    input scalings), when registered, else ``cmtl``."""
    names = {info.name for info in learners.available()}
    return "adaptive-auto" if "adaptive-auto" in names else "cmtl"


def learner_grid(name: str) -> list[dict[str, Any]]:
    """Defaults, then the first :data:`STEP_PARAMS` value x 0.1 and x 10 (when numeric)."""
    params = {p.name: p.default for p in learners.get(name).params}
    for key in STEP_PARAMS:
        value = params.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return [{}, {key: float(value) * 0.1}, {key: float(value) * 10.0}]
    return [{}]


def _mistakes(dataset: Dataset, name: str, params: dict[str, Any], order: np.ndarray) -> int:
    setup = LearnerSetup.create(dataset, name, params, budget=None)
    model = setup.build(seed=0, rounds=dataset.n)
    result = stream_pass(model, RowSource(dataset), order)
    return int((predictions(result.scores) != dataset.y[order]).sum())


def run_pass(
    dataset: Dataset,
    name: str,
    params: dict[str, Any],
    orders: list[np.ndarray],
    seconds: float,
) -> dict[str, Any]:
    """Mistake rates of ``name`` with ``params`` on each order, in one child of ``seconds``.

    Returns ``{"rates": [...], "seconds": s}`` or ``{"error": why}``.
    """

    def work() -> dict[str, Any]:
        import time

        t0 = time.perf_counter()
        rates = [_mistakes(dataset, name, params, o) / o.shape[0] for o in orders]
        return {"rates": rates, "seconds": time.perf_counter() - t0}

    alarm = max(1, int(seconds))
    return call_isolated(work, max(1, alarm - ALARM_GRACE), timeout=alarm + 30)
