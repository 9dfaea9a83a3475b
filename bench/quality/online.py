"""The online part: test-then-train mistake rates of every system on one stream.

Per stream: the peers and our learners are tuned on the tuning shuffle
(:func:`bench.quality.streams.tuning_order`); VW and River choose the loss (or
model) and the step size within each layout, our learners within their grid
(:func:`bench.quality.ours.learner_grid`). The chosen configurations, and the
default learner with its defaults (no per-dataset tuning), then run on the
evaluation shuffles. Reported: mean +- 95% CI of the mistake rate, the best of
ours, the best peer, and the paired differences (default - best peer, best of
ours - best peer) with their 95% CI.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.quality.ours import learner_grid, run_pass
from bench.quality.peers import PeerConfig, PeerRows, river_grid, run_online, vw_grid
from bench.quality.stats import mean_ci, paired_difference
from bench.quality.streams import StreamSpec, event_orders, tuning_order
from evaluation.common import predictions
from evaluation.dataset import Dataset

__all__ = ["OnlineSettings", "run_stream"]


@dataclass(frozen=True)
class OnlineSettings:
    """What one online run measures."""

    learners: Sequence[str]
    default: str
    runs: int = 5
    seed: int = 0
    quick: bool = False
    vw_rates: tuple[float, ...] = (0.1, 0.5, 2.0)
    river_rates: tuple[float, ...] = (0.01, 0.1, 1.0)
    seconds: float = 60.0  # time limit of one tuning pass of one of our learners
    peers: tuple[str, ...] = ("vw", "river")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _rate(scores: np.ndarray, y: np.ndarray) -> float:
    return float((predictions(scores) != y).mean())


def _peers(
    dataset: Dataset, settings: OnlineSettings, tune: np.ndarray, orders: list[np.ndarray]
) -> dict[str, Any]:
    rows = PeerRows(dataset)
    grid: list[PeerConfig] = []
    if "vw" in settings.peers:
        grid += vw_grid(settings.vw_rates)
    if "river" in settings.peers:
        grid += river_grid(settings.river_rates)
    tuned: dict[str, tuple[float, PeerConfig]] = {}
    tuning: dict[str, float] = {}
    for config in grid:
        rate = _rate(run_online(config, rows, tune), dataset.y[tune])
        tuning[config.label] = rate
        key = f"{config.system} {config.layout}"
        if key not in tuned or rate < tuned[key][0]:
            tuned[key] = (rate, config)
    out: dict[str, Any] = {}
    for key, (rate, config) in tuned.items():
        t0 = time.perf_counter()
        rates = [_rate(run_online(config, rows, o), dataset.y[o]) for o in orders]
        out[key] = {
            "config": config.label,
            "vw_args": config.vw_args() if config.system == "vw" else None,
            "tuning_rate": rate,
            "rates": rates,
            **mean_ci(rates),
        }
        _log(
            f"   {key:<22} {config.label:<34} {100 * out[key]['mean']:6.2f}%"
            f"  ({time.perf_counter() - t0:.1f} s)"
        )
    return {"systems": out, "tuning": tuning}


def _ours(
    dataset: Dataset, settings: OnlineSettings, tune: np.ndarray, orders: list[np.ndarray]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in settings.learners:
        tuning: list[dict[str, Any]] = []
        best: tuple[float, dict[str, Any], float] | None = None
        for params in learner_grid(name):
            got = run_pass(dataset, name, params, [tune], settings.seconds)
            tuning.append({"params": params, **got})
            if "error" in got:
                if not params:
                    break  # the defaults do not run (or are too slow): skip the learner
                continue
            if best is None or got["rates"][0] < best[0]:
                best = (got["rates"][0], params, got["seconds"])
        if best is None:
            out[name] = {"error": tuning[0].get("error", "no configuration ran"), "tuning": tuning}
            _log(f"   {name:<22} {out[name]['error']}")
            continue
        _, params, seconds = best
        got = run_pass(dataset, name, params, orders, len(orders) * (3 * seconds + 5))
        if "error" in got:
            out[name] = {"error": got["error"], "params": params, "tuning": tuning}
            _log(f"   {name:<22} {got['error']}")
            continue
        out[name] = {
            "params": params,
            "rates": got["rates"],
            "tuning": tuning,
            **mean_ci(got["rates"]),
        }
        _log(f"   {name:<22} {params!s:<34} {100 * out[name]['mean']:6.2f}%")
    return out


def _default(
    dataset: Dataset, settings: OnlineSettings, orders: list[np.ndarray], seconds: float
) -> dict[str, Any]:
    got = run_pass(dataset, settings.default, {}, orders, seconds)
    if "error" in got:
        return {"name": settings.default, "error": got["error"]}
    return {"name": settings.default, "rates": got["rates"], **mean_ci(got["rates"])}


def _best(systems: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    ok = [(k, v) for k, v in systems.items() if "rates" in v]
    return min(ok, key=lambda kv: kv[1]["mean"]) if ok else None


def run_stream(spec: StreamSpec, settings: OnlineSettings) -> dict[str, Any]:
    """Every system on one stream; the JSON entry of the stream."""
    t0 = time.perf_counter()
    dataset = spec.load(settings.quick)
    _log(f"== {spec.name}: {dataset.n} events, {dataset.n_tasks} tasks, d = {dataset.n_features}")
    tune = tuning_order(dataset.n, settings.seed)
    orders = event_orders(dataset.n, settings.runs, settings.seed)
    peers = _peers(dataset, settings, tune, orders)
    ours = _ours(dataset, settings, tune, orders)
    default = _default(dataset, settings, orders, len(orders) * settings.seconds)
    entry: dict[str, Any] = {
        "stream": spec.name,
        "dataset": dataset.name,
        "description": dataset.description,
        "events": dataset.n,
        "tasks": dataset.n_tasks,
        "features": dataset.n_features,
        "peers": peers,
        "ours": ours,
        "default": default,
    }
    best_peer, best_ours = _best(peers["systems"]), _best(ours)
    if best_peer is not None:
        entry["best_peer"] = {"system": best_peer[0], **best_peer[1]}
        if "rates" in default:
            entry["default_vs_best_peer"] = paired_difference(
                default["rates"], best_peer[1]["rates"]
            )
        if best_ours is not None:
            entry["best_ours_vs_best_peer"] = paired_difference(
                best_ours[1]["rates"], best_peer[1]["rates"]
            )
    if best_ours is not None:
        entry["best_ours"] = {"learner": best_ours[0], **best_ours[1]}
    entry["wall_seconds"] = time.perf_counter() - t0
    return entry
