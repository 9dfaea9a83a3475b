"""zhang2018 Table I: the two outlier-detection stages that follow the table.

Both only detect; neither re-runs any part of the table's tuning, and both
replay the online protocol of ``omtl evaluate`` (same orders and learner seeds)
through :func:`~bench.papers.zhang2018_rom_setup.replay`.

1. **gamma calibrated for detection** (:func:`calibrate`, :func:`report`):
   :data:`DETECT_PROTOCOL`;
2. **the relative rule** (:func:`run_relative_rule`, ``outlier_rule="relative"``):
   :data:`RELATIVE_RULE_PROTOCOL`. It reads the hyperparameters the table
   selected from ``bench/results/rom_table.json``, writes
   ``bench/results/rom_outlier_rule.json`` and its section of
   ``bench/results/rom_table.md``; ``python -m bench.papers.zhang2018_rom
   --only outlier-rule`` runs it alone.

The protocols' text is also the text of the results' sections.
"""

from __future__ import annotations

import json
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np

from bench import RESULTS
from bench.papers.zhang2018_rom_setup import DELTA2, flag_counts, replay
from learners.rom.base import OUTLIER_FACTOR, relative_outliers

__all__ = [
    "DETECT_GAMMAS",
    "DETECT_PROTOCOL",
    "EXPECTED",
    "FACTORS",
    "RELATIVE_RULE_PROTOCOL",
    "calibrate",
    "choose_factor",
    "detection_markdown",
    "report",
    "run_relative_rule",
]

#: The truth by construction: task 5 (index 4) is the outlier at delta^2 = 12.25 and
#: there is none at 0.09 (delta^2 = 1.00 is left out: a matter of degree).
EXPECTED: dict[float, list[int]] = {0.09: [], 12.25: [4]}

DETECT_PROTOCOL = """The table's hyperparameters are selected by error alone, and the error is nearly
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
DETECT_GAMMAS: dict[str, tuple[float, ...]] = {
    "rom-rda": tuple(float(g) for g in np.round(np.logspace(-1.0, 0.5, 16), 4)),
    "rom-pgd": tuple(float(g) for g in np.round(np.logspace(0.0, 1.5, 16), 3)),
}
DETECT_TUNE_RUNS = 3

RELATIVE_RULE_PROTOCOL = """A detection-only stage: it re-runs no part of the table's tuning. It reads the
hyperparameters the table selected (``bench/results/rom_table.json``: the
error-selected point for each delta^2 and the detection-calibrated gamma of
the stage above) and replays the online protocol of ``omtl evaluate``
(same orders and learner seeds) to keep each run's final ``outlier_scores()``.
``bench.papers.zhang2018_rom`` runs this stage last, after writing rom_table.md.

The rule (:func:`learners.rom.base.relative_outliers`): task i is flagged when
``||q_i|| > 0`` and ``||q_i|| > outlier_factor * mean_{j != i} ||q_j||``.
Protocol for its constant. ``outlier_factor`` runs over ``FACTORS`` on the
*tuning instance* (dataset seed 1, 10 shuffles with --seed 1), for
rom-rda at both gamma settings, where the truth is known by construction (task
5, index 4, is the outlier at delta^2 = 12.25; there is none at 0.09). The
factors with the most runs whose flagged set is exactly right form a plateau;
the chosen factor is its middle element (the centre, not an edge tuned to the
data). That factor is then applied, unchanged, to rom-rda and rom-pgd on the
*reporting instance* (dataset seed 0, the table's 10 shuffles with --seed 0),
where the flags come from ``model.outlier_tasks()`` itself. The learner's
default factor (2) is reported beside it."""
FACTORS = (1.02, 1.05, 1.1, 1.15, 1.2, 1.3, 1.5, 2.0, 3.0, 5.0, 10.0)
RULE_TUNE_RUNS = 10
RULE_LEARNERS = ("rom-rda", "rom-pgd")
SECTION = "## Outlier detection with the relative rule"

Job = tuple[str, str, float, dict[str, Any], int | None, int, int]


# ------------------------------------------------------------------ gamma for detection
def _sweep_point(job: tuple[str, float, float, dict[str, Any]]) -> dict[str, Any]:
    learner, gamma, delta2, params = job
    rep = replay(
        delta2, learner, {**params, "gamma": gamma}, data_seed=1, seed=1, runs=DETECT_TUNE_RUNS
    )
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
            "of_runs": DETECT_TUNE_RUNS * len(EXPECTED),
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


def detection_markdown(calibrated: dict[str, Any], detection: list[dict[str, Any]]) -> list[str]:
    """The section of the detection-calibration stage in rom_table.md."""
    lines = ["## Outlier detection with gamma calibrated for detection", ""]
    lines += [*DETECT_PROTOCOL.split("\n\n"), ""]
    for learner, cal in calibrated.items():
        lines.append(
            f"- {learner}: gamma grid {list(DETECT_GAMMAS[learner])}; chosen gamma = "
            f"{cal['gamma']:g} ({cal['exact_runs']} of {cal['of_runs']} tuning runs exactly right)"
        )
    lines += ["", "| learner | delta^2 | gamma | runs flagged per task | last run | "]
    lines[-1] += "error % (Task 1..5) | all |"
    lines += ["|---|---|---|---|---|---|---|"]
    for r in detection:
        tasks = ", ".join(f"{e:.2f}" for e in r["task_error"])
        lines.append(
            f"| {r['learner']} | {r['delta2']:g} | {r['params']['gamma']:g} | {r['flag_counts']} "
            f"| {r['last_run_flags']} | {tasks} | {r['overall_error']:.2f} |"
        )
    return [*lines, ""]


# ------------------------------------------------------------------ the relative rule
def _scores(job: Job) -> dict[str, Any]:
    """Final outlier scores and ``outlier_tasks()`` of each run of one configuration."""
    learner, setting, delta2, params, data_seed, seed, runs = job
    rep = replay(delta2, learner, params, data_seed=data_seed, seed=seed, runs=runs)
    return {
        "learner": learner,
        "setting": setting,
        "delta2": delta2,
        "params": params,
        "scores": rep.scores,
        "flags": rep.flag_sets,
    }


def choose_factor(tuning: list[dict[str, Any]]) -> tuple[float, dict[float, int], int]:
    """The middle of the plateau of factors with the most exactly-right tuning runs."""
    exact = {
        f: sum(
            sum(relative_outliers(np.array(s), f) == EXPECTED[t["delta2"]] for s in t["scores"])
            for t in tuning
        )
        for f in FACTORS
    }
    best = max(exact.values())
    plateau = [f for f in FACTORS if exact[f] == best]
    return plateau[len(plateau) // 2], exact, sum(len(t["scores"]) for t in tuning)


def _settings(table: dict[str, Any]) -> dict[tuple[str, str, float], dict[str, Any]]:
    selected = {(r["learner"], r["delta2"]): r["params"] for r in table["results"]}
    calibrated = {k: v["gamma"] for k, v in table["detection"]["calibration"].items()}
    out = {}
    for learner in RULE_LEARNERS:
        for d in DELTA2:
            out[(learner, "error-selected", d)] = dict(selected[(learner, d)])
            cal = {**selected[(learner, d)], "gamma": calibrated[learner]}
            out[(learner, "detection-calibrated", d)] = cal
    return out


def _statement(r: dict[str, Any]) -> str:
    """How often the flagged set is exactly the truth (task 5 alone at 12.25, none at 0.09)."""
    runs = len(r["flags"])
    exact = sum(sorted(f) == EXPECTED[r["delta2"]] for f in r["flags"])
    want = "only task 5 flagged" if EXPECTED[r["delta2"]] else "no task flagged"
    return (
        f"- {r['learner']} ({r['setting']}, gamma = {r['params']['gamma']:g}), delta^2 = "
        f"{r['delta2']:g}: {want} in {exact} of {runs} runs; runs flagging each task: "
        f"{flag_counts(r['flags'])}"
    )


def _margin(r: dict[str, Any]) -> str:
    """Range of ``s_i / mean_{j != i} s_j`` for task 5 and the largest over tasks 1-4."""
    five, rest = [], []
    for s in np.array(r["scores"]):
        if s.sum() <= 0.0:
            continue
        others = (s.sum() - s) / (len(s) - 1)
        ratio = np.divide(s, others, out=np.full(len(s), np.inf), where=others > 0)
        five.append(ratio[4])
        rest.append(ratio[:4].max())

    def span(v: list[float]) -> str:
        return f"{min(v):.3g}-{max(v):.3g}" if v else "-"

    return (
        f"- {r['learner']} ({r['setting']}), delta^2 = {r['delta2']:g}: task 5 {span(five)}; "
        f"largest of tasks 1-4 {span(rest)} ({len(five)} of {len(r['scores'])} runs with a "
        "non-zero score)"
    )


def _markdown(
    factor: float,
    exact: dict[float, int],
    of: int,
    rows: list[dict[str, Any]],
    runs: int,
    stamp: str,
) -> list[str]:
    lines = [
        SECTION,
        "",
        f"Generated by `python -m bench.papers.zhang2018_rom --only outlier-rule --runs {runs}` "
        f"on {stamp}.",
        "",
        *[f"{para}\n" for para in RELATIVE_RULE_PROTOCOL.split("\n\n")],
        "",
    ]
    sweep = ", ".join(f"{f:g}: {n}" for f, n in exact.items())
    lines += [
        f"Tuning (rom-rda, both gamma settings, {of} runs): exactly-right runs per factor: "
        f"{sweep}. Chosen `outlier_factor` = {factor:g}.",
        "",
    ]
    lines += [
        f"Reporting instance, {runs} runs: in how many runs each task (1..5) ends flagged.",
        "",
        f"| learner | gamma setting | delta^2 | gamma | relative, factor {factor:g} "
        f"(`outlier_tasks()`) | relative, default factor {OUTLIER_FACTOR.default:g} | "
        "absolute, threshold 0 |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        default = [
            relative_outliers(np.array(s), float(OUTLIER_FACTOR.default)) for s in r["scores"]
        ]
        absolute = [[int(k) for k in np.flatnonzero(np.array(s) > 0.0)] for s in r["scores"]]
        lines.append(
            f"| {r['learner']} | {r['setting']} | {r['delta2']:g} | {r['params']['gamma']:g} | "
            f"{flag_counts(r['flags'])} | {flag_counts(default)} | {flag_counts(absolute)} |"
        )
    lines += ["", "Statements (relative rule, the chosen factor, reporting instance):", ""]
    lines += [_statement(r) for r in rows if r["delta2"] in EXPECTED]
    lines += [
        "",
        "Margins: ||q_i|| over the mean of the other tasks' scores (min-max over runs; "
        "'-' when every score is 0):",
        "",
    ]
    lines += [_margin(r) for r in rows if r["delta2"] in EXPECTED]
    lines += [
        "",
        "The same runs through the command line (the JSON key `outlier_tasks` holds the last "
        "run's flags, `outlier_scores` its scores):",
        "",
    ]
    for r in rows:
        extra = " ".join(
            f"--param {k}={v!r}"
            for k, v in sorted(r["params"].items())
            if k not in ("outlier_rule", "outlier_factor")
        )
        lines.append(
            f"- `omtl evaluate synthetic-rom:delta2={r['delta2']:g} --protocol online --runs "
            f"{runs} --seed 0 --learner {r['learner']} {extra} --param outlier_rule=relative "
            f"--param outlier_factor={factor:g}`"
        )
    return lines


def _splice(path: Path, section: list[str]) -> None:
    """Replace (or append) the section of this stage in ``path``."""
    text = path.read_text()
    head, _, rest = text.partition(SECTION)
    tail = ""
    if rest:
        nxt = rest.find("\n## ")
        tail = rest[nxt:] if nxt >= 0 else ""
    path.write_text(head.rstrip("\n") + "\n\n" + "\n".join(section) + "\n" + tail)


def run_relative_rule(runs: int, jobs: int) -> str:
    """Tune the factor, replay the reporting runs, write the results; returns the section."""
    table = json.loads((RESULTS / "rom_table.json").read_text())
    settings = _settings(table)
    tune_jobs: list[Job] = [
        ("rom-rda", s, d, p, 1, 1, RULE_TUNE_RUNS)
        for (learner, s, d), p in settings.items()
        if learner == "rom-rda" and d in EXPECTED
    ]
    started = time.time()
    with Pool(jobs) as pool:
        tuning = pool.map(_scores, tune_jobs)
        factor, exact, of = choose_factor(tuning)
        report_jobs: list[Job] = [
            (
                learner,
                s,
                d,
                {**p, "outlier_rule": "relative", "outlier_factor": factor},
                None,
                0,
                runs,
            )
            for (learner, s, d), p in settings.items()
        ]
        rows = pool.map(_scores, report_jobs)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    section = _markdown(factor, exact, of, rows, runs, stamp)
    section.append(f"\n({time.time() - started:.0f} s.)")
    _splice(RESULTS / "rom_table.md", section)
    doc = {
        "factor": factor,
        "tuning_exact": {str(k): v for k, v in exact.items()},
        "tuning": tuning,
        "report": rows,
    }
    (RESULTS / "rom_outlier_rule.json").write_text(json.dumps(doc, indent=1) + "\n")
    return "\n".join(section)
