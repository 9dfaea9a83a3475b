"""xu2018 (AMLC): Table 1, Landmine column, and Fig. 1, through ``omtl evaluate`` / ``omtl compare``.

**Table 1** (the default). The paper's figures come from the authors' code run on
all 29 landmine regions, so the default dataset is ``landmine:train=160`` (29 tasks,
160 training rows each); ``--dataset landmine19`` gives the 19-task variant. Runs,
for every row, exactly::

    omtl evaluate landmine:train=160 --protocol split --runs 10 --seed 0 --learner NAME \
        [--param KEY=VALUE ...] --json FILE

(160 training rows per task, the rest for test, one pass over the shuffled
training rows, 10 runs with their own splits and shuffles), prints test accuracy
and oracle queries beside the paper's figures, checks the acceptance figures of
the AMLC issue (AMLC accuracy >= 0.930 with <= 400 queries; queries
AMLC < PEER < Independent) and writes ``bench/results/amlc_table1_landmine29.{md,json}``
(``amlc_table1.{md,json}`` with ``--dataset landmine19``).

The ``+-`` figures are standard deviations over the runs, as in the authors'
summary code (their Table 1 calls them a 95% confidence level).

**Fig. 1** (``--figure1``): test accuracy against the query budget on landmine19.
``omtl compare`` evaluates one budget per call, so this calls it for a list of
budgets, 1% .. 10% of the 3040 training rows of ``landmine19`` (the range of the
paper's landmine panel; the authors' script uses ``linspace(0.01, 0.1, 10)`` for
landmine), each time exactly as::

    omtl compare landmine19 --learners amlc,peer-share,peer,independent,random-query \
        --protocol split --runs 10 --seed 0 --budget B --json FILE

plus ``omtl evaluate landmine19 --learner amlc --param faithful=paper ...`` for the
paper-literal AMLC (the default ``amlc`` is the authors' code). With a budget the learner stops consuming labels once it
has used B of them and predictions go on (the authors' code stops the pass; the
model is the same). The call at the largest budget also passes ``--plot`` and
so leaves the harness's own figure (``amlc_fig1_compare.png``: accuracy against
labels used within that run). Output in ``bench/results/``:
``amlc_fig1_landmine.{png,md,json}``. Filled markers: on average the runs did
not spend the whole budget (as in the paper's figure); hollow: budget spent.

Usage::

    python -m bench.papers.xu2018_amlc [--runs 10] [--seed 0] [--dataset landmine:train=160]
    python -m bench.papers.xu2018_amlc --figure1 [--runs 10] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import RESULTS
from bench.papers.cli import omtl_json, shown

#: xu2018 Table 1, Landmine Detection column: (accuracy, +-, queries, +-).
PAPER = {
    "Random": (0.8914, 0.0126, 2323.5, 11.5),
    "Independent": (0.9070, 0.0079, 2770.3, 25.8),
    "PEER": (0.9362, 0.0025, 1206.0, 23.2),
    "PEER+Share": (0.9231, 0.0112, 1885.8, 71.3),
    "AMLC": (0.9367, 0.0020, 189.1, 12.0),
}

#: (row label, paper row, learner, parameters)
ROWS: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("Random", "Random", "random-query", {}),
    ("Independent", "Independent", "independent", {}),
    ("PEER", "PEER", "peer", {}),
    ("PEER+Share", "PEER+Share", "peer-share", {}),
    ("AMLC (default: authors' code)", "AMLC", "amlc", {}),
    ("AMLC (faithful=paper)", "AMLC", "amlc", {"faithful": "paper"}),
    (
        "AMLC (faithful=paper, share_test=prediction)",
        "AMLC",
        "amlc",
        {"faithful": "paper", "share_test": "prediction"},
    ),
    ("AMLC (faithful=paper, b = 1/K)", "AMLC", "amlc", {"faithful": "paper", "b": "1/K"}),
)

#: Number of tasks of the datasets this script knows (for the b = 1/K row).
N_TASKS = {"landmine19": 19, "landmine:train=160": 29}

#: Fig. 1: the training rows of landmine19, the learners of ``omtl compare`` and the
#: paper-literal AMLC run beside them (the default ``amlc`` is the authors' code).
N_TRAIN = 19 * 160
FIG1_LEARNERS = ("amlc", "peer-share", "peer", "independent", "random-query")
PAPER_VARIANT = "amlc (faithful=paper)"


# ------------------------------------------------------------------ Table 1
def command(dataset: str, learner: str, params: dict[str, Any], runs: int, seed: int) -> list[str]:
    """The ``omtl evaluate`` arguments of one row."""
    cmd = ["evaluate", dataset, "--protocol", "split", "--runs", str(runs), "--seed", str(seed)]
    cmd += ["--learner", learner]
    for key, value in params.items():
        cmd += ["--param", f"{key}={value}"]
    return cmd


def table1(dataset: str, runs: int, seed: int) -> None:
    """Every row through the CLI; print and write the table, its checks and its JSON."""
    K = N_TASKS[dataset]
    rows = []
    for label, paper_row, learner, given in ROWS:
        params = {k: (1.0 / K if v == "1/K" else v) for k, v in given.items()}
        cmd = command(dataset, learner, params, runs, seed)
        doc = omtl_json(cmd)
        assert doc["n_tasks"] == K, f"{dataset} has {doc['n_tasks']} tasks, expected {K}"
        m = doc["metrics"]
        rows.append(
            {
                "row": label,
                "learner": learner,
                "params": params,
                "command": shown(cmd),
                "accuracy_mean": m["accuracy_mean"],
                "accuracy_std": m["accuracy_std"],
                "queries_mean": m["queries_mean"],
                "queries_std": m["queries_std"],
                "mistake_rate_mean": m["mistake_rate_mean"],
                "paper": dict(
                    zip(("accuracy", "accuracy_pm", "queries", "queries_pm"), PAPER[paper_row])
                ),
            }
        )
        print(f"done: {label}", file=sys.stderr)

    checks = acceptance(rows)
    table = table1_markdown(dataset, rows, checks, runs, seed)
    print(table)
    RESULTS.mkdir(exist_ok=True)
    stem = "amlc_table1" if dataset == "landmine19" else "amlc_table1_landmine29"
    (RESULTS / f"{stem}.md").write_text(table)
    payload = {"dataset": dataset, "runs": runs, "seed": seed, "rows": rows}
    payload["acceptance"] = checks
    (RESULTS / f"{stem}.json").write_text(json.dumps(payload, indent=2) + "\n")


def acceptance(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's acceptance figures, for the default (authors' code) and the paper-literal AMLC."""
    by = {r["row"]: r for r in rows}
    out = []
    for label in ("AMLC (default: authors' code)", "AMLC (faithful=paper)"):
        amlc = by[label]
        acc, q = amlc["accuracy_mean"], amlc["queries_mean"]
        out.append(
            {
                "check": f"{label}: accuracy >= 0.930 with <= 400 queries",
                "measured": f"accuracy {acc:.4f}, queries {q:.1f}",
                "holds": bool(acc >= 0.930 and q <= 400),
            }
        )
        order = (q, by["PEER"]["queries_mean"], by["Independent"]["queries_mean"])
        out.append(
            {
                "check": f"queries {label} < PEER < Independent",
                "measured": " < ".join(f"{v:.1f}" for v in order),
                "holds": bool(order[0] < order[1] < order[2]),
            }
        )
    return out


def table1_markdown(
    dataset: str, rows: list[dict[str, Any]], checks: list[dict[str, Any]], runs: int, seed: int
) -> str:
    """The table beside the paper's, the acceptance lines and the commands."""
    K = N_TASKS[dataset]
    lines = [
        f"# xu2018 Table 1, Landmine ({dataset}, split protocol, {runs} runs, seed {seed})",
        "",
        f"Test accuracy and oracle queries during the single training pass ({160 * K} training"
        f" rows: 160 per task for {K} tasks; the rest for test). +- is the standard deviation"
        " over runs.",
        "",
        "| model | accuracy | queries | paper accuracy | paper queries |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        p = r["paper"]
        lines.append(
            f"| {r['row']} | {r['accuracy_mean']:.4f} +- {r['accuracy_std']:.4f} "
            f"| {r['queries_mean']:.1f} +- {r['queries_std']:.1f} "
            f"| {p['accuracy']:.4f} +- {p['accuracy_pm']:.4f} "
            f"| {p['queries']:.1f} +- {p['queries_pm']:.1f} |"
        )
    lines += ["", "## Acceptance", ""]
    for c in checks:
        lines.append(
            f"- {'holds' if c['holds'] else 'DOES NOT HOLD'}: {c['check']} ({c['measured']})"
        )
    lines += ["", "## Commands", ""]
    lines += [f"- `{r['command']}`" for r in rows]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ Fig. 1
def budgets() -> list[int]:
    """1%, 2%, ..., 10% of the training rows."""
    return [round(N_TRAIN * k / 100) for k in range(1, 11)]


def compare_at(budget: int, runs: int, seed: int, plot: Path | None) -> dict[str, Any]:
    """Every learner's figures at one budget: the five via compare, the paper variant via evaluate."""
    common = ["--protocol", "split", "--runs", str(runs), "--seed", str(seed)]
    common += ["--budget", str(budget)]
    cmd = ["compare", "landmine19", "--learners", ",".join(FIG1_LEARNERS), *common]
    if plot is not None:
        cmd += ["--plot", str(plot)]
    docs = omtl_json(cmd)
    out = {d["learner"]: d["metrics"] for d in docs}
    paper = omtl_json(
        ["evaluate", "landmine19", "--learner", "amlc", "--param", "faithful=paper", *common]
    )
    out[PAPER_VARIANT] = paper["metrics"]
    return out


def figure1(runs: int, seed: int, jobs: int) -> None:
    """Every budget (``jobs`` at a time); print and write the table, the JSON and the plot."""
    RESULTS.mkdir(exist_ok=True)
    grid = budgets()
    last = grid[-1]

    def one(b: int) -> dict[str, Any]:
        plot = RESULTS / "amlc_fig1_compare.png" if b == last else None
        figures = compare_at(b, runs, seed, plot)
        print(f"done: budget {b}", file=sys.stderr)
        return figures

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = dict(zip(grid, pool.map(one, grid)))
    names = [*FIG1_LEARNERS, PAPER_VARIANT]
    curves = {
        name: {
            "budget": grid,
            "accuracy_mean": [results[b][name]["accuracy_mean"] for b in grid],
            "accuracy_std": [results[b][name]["accuracy_std"] for b in grid],
            "queries_mean": [results[b][name]["queries_mean"] for b in grid],
        }
        for name in names
    }
    payload = {"dataset": "landmine19", "n_train": N_TRAIN, "runs": runs, "seed": seed}
    payload["curves"] = curves
    (RESULTS / "amlc_fig1_landmine.json").write_text(json.dumps(payload, indent=2) + "\n")
    table = figure1_markdown(curves, grid, runs, seed)
    (RESULTS / "amlc_fig1_landmine.md").write_text(table)
    print(table)
    plot_budget_curves(curves, RESULTS / "amlc_fig1_landmine.png", runs)


def figure1_markdown(
    curves: dict[str, dict[str, list[float]]], grid: list[int], runs: int, seed: int
) -> str:
    """Accuracy (and mean labels used) per budget, one column per learner."""
    names = list(curves)
    lines = [
        f"# xu2018 Fig. 1, Landmine: test accuracy vs query budget ({runs} runs, seed {seed})",
        "",
        "Each cell: mean test accuracy (mean labels used). Budget = labels the learner may use",
        f"during its single pass over the {N_TRAIN} training rows.",
        "",
        "| budget | " + " | ".join(names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for i, b in enumerate(grid):
        cells = [
            f"{curves[n]['accuracy_mean'][i]:.4f} ({curves[n]['queries_mean'][i]:.0f})"
            for n in names
        ]
        lines.append(f"| {b} ({100 * b / N_TRAIN:.0f}%) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_budget_curves(curves: dict[str, dict[str, list[float]]], path: Path, runs: int) -> None:
    """Accuracy against budget; filled markers where budget was left over on average."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for name, c in curves.items():
        (line,) = ax.plot(c["budget"], c["accuracy_mean"], label=name, linewidth=1.5)
        colour = line.get_color()
        for b, acc, used in zip(c["budget"], c["accuracy_mean"], c["queries_mean"], strict=True):
            left = used < b - 1e-9
            ax.plot(
                b,
                acc,
                marker="o",
                markersize=6,
                markeredgecolor=colour,
                markerfacecolor=colour if left else "white",
            )
    ax.set_xlabel(f"query budget (labels; {N_TRAIN} training rows)")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"landmine19: accuracy vs query budget ({runs} runs; filled = budget left)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    """Command line entry (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--dataset",
        default="landmine:train=160",
        choices=sorted(N_TASKS),
        help="Table 1: landmine:train=160 (default; all 29 regions, 160 rows each, the "
        "setting of the paper's Table 1) or landmine19",
    )
    parser.add_argument(
        "--figure1",
        action="store_true",
        help="Fig. 1 (accuracy against query budget on landmine19) instead of Table 1",
    )
    parser.add_argument("--jobs", type=int, default=2, help="Fig. 1: budgets run at a time")
    args = parser.parse_args(argv)
    if args.figure1:
        if args.dataset != "landmine19":
            parser.error("--figure1 runs on landmine19 only")
        figure1(args.runs, args.seed, args.jobs)
    else:
        table1(args.dataset, args.runs, args.seed)


if __name__ == "__main__":
    main()
