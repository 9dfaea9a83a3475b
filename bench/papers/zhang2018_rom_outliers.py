"""Outlier flags of the ROM learners under the relative rule (``outlier_rule="relative"``).

A detection-only stage: it re-runs no part of the table's tuning. It reads the
hyperparameters the table selected (``bench/results/rom_table.json``: the
error-selected point for each delta^2 and the detection-calibrated gamma of
:mod:`bench.rom_detect`) and replays the online protocol of ``omtl evaluate``
(same orders and learner seeds) to keep each run's final ``outlier_scores()``.
``bench.rom_table`` runs this stage last, after writing rom_table.md.

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
default factor (2) is reported beside it.

Usage: ``.venv/bin/python -m bench.rom_outlier_rule [--runs 10] [--jobs 2]``
(writes ``bench/results/rom_outlier_rule.json`` and the section "Outlier
detection with the relative rule" of ``bench/results/rom_table.md``).
"""

from __future__ import annotations

import argparse
import json
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np

from bench.rom_runs import dataset, spec
from evaluation.common import LearnerSetup, RowSource, learner_seed, run_rng, stream_pass
from learners.rom.base import OUTLIER_FACTOR, relative_outliers

__all__ = ["FACTORS", "choose_factor", "main", "run"]

RESULTS = Path(__file__).parents[1] / "results"
FACTORS = (1.02, 1.05, 1.1, 1.15, 1.2, 1.3, 1.5, 2.0, 3.0, 5.0, 10.0)
EXPECTED: dict[float, list[int]] = {0.09: [], 12.25: [4]}
DELTA2 = (0.09, 1.0, 12.25)
TUNE_RUNS = 10
LEARNERS = ("rom-rda", "rom-pgd")
SECTION = "## Outlier detection with the relative rule"

Job = tuple[str, str, float, dict[str, Any], int | None, int, int]


def _scores(job: Job) -> dict[str, Any]:
    """Final outlier scores and ``outlier_tasks()`` of each run of one configuration."""
    learner, setting, delta2, params, data_seed, seed, runs = job
    data = dataset(spec(delta2, data_seed))
    setup = LearnerSetup.create(data, learner, params, budget=None)
    rows = RowSource(data)
    scores, flags = [], []
    for r in range(runs):
        order = run_rng(seed, r).permutation(data.n)
        model = setup.build(seed=learner_seed(seed, r), rounds=data.n)
        stream_pass(model, rows, order)
        scores.append([float(s) for s in model.outlier_scores()])  # type: ignore[attr-defined]
        flags.append(list(model.outlier_tasks()))  # type: ignore[attr-defined]
    return {
        "learner": learner,
        "setting": setting,
        "delta2": delta2,
        "params": params,
        "scores": scores,
        "flags": flags,
    }


def _counts(flag_sets: list[list[int]], n_tasks: int = 5) -> list[int]:
    counts = np.zeros(n_tasks, dtype=int)
    for flagged in flag_sets:
        counts[flagged] += 1
    return [int(c) for c in counts]


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
    for learner in LEARNERS:
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
        f"{_counts(r['flags'])}"
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
    doc = (__doc__ or "").split("\n\n")
    lines = [
        SECTION,
        "",
        f"Generated by `.venv/bin/python -m bench.rom_outlier_rule --runs {runs}` on {stamp}.",
        "",
        *[f"{para}\n" for para in doc[1:3]],
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
            f"{_counts(r['flags'])} | {_counts(default)} | {_counts(absolute)} |"
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


def run(runs: int, jobs: int) -> str:
    """Tune the factor, replay the reporting runs, write the results; returns the section."""
    table = json.loads((RESULTS / "rom_table.json").read_text())
    settings = _settings(table)
    tune_jobs: list[Job] = [
        ("rom-rda", s, d, p, 1, 1, TUNE_RUNS)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    print(run(args.runs, args.jobs))


if __name__ == "__main__":
    main()
