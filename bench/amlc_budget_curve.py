"""xu2018 Fig. 1 (Landmine): test accuracy against the query budget, through ``omtl compare``.

``omtl compare`` evaluates one budget per call, so this script calls it for a
list of budgets, 1% .. 10% of the 3040 training rows of ``landmine19`` (the
range of the paper's landmine panel; the authors' script uses
``linspace(0.01, 0.1, 10)`` for landmine), each time exactly as::

    omtl compare landmine19 --learners amlc,peer-share,peer,independent,random-query \
        --protocol split --runs 10 --seed 0 --budget B --json FILE

plus ``omtl evaluate landmine19 --learner amlc --param faithful=code ...`` for the
code-faithful AMLC. With a budget the learner stops consuming labels once it
has used B of them and predictions go on (the authors' code stops the pass; the
model is the same). The call at the largest budget also passes ``--plot`` and
so leaves the harness's own figure (``amlc_fig1_compare.png``: accuracy against
labels used within that run). Output in ``bench/results/``:
``amlc_fig1_landmine.{png,md,json}``. Filled markers: on average the runs did
not spend the whole budget (as in the paper's figure); hollow: budget spent.

Usage: ``.venv/bin/python bench/amlc_budget_curve.py [--runs 10] [--jobs 2]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
OMTL = str(Path(sys.executable).parent / "omtl")
N_TRAIN = 19 * 160
LEARNERS = ("amlc", "peer-share", "peer", "independent", "random-query")
CODE_VARIANT = "amlc (faithful=code)"


def budgets() -> list[int]:
    """1%, 2%, ..., 10% of the training rows."""
    return [round(N_TRAIN * k / 100) for k in range(1, 11)]


def _run(cmd: list[str]) -> Any:
    """Run one CLI call and return its JSON output."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "doc.json"
        subprocess.run([*cmd, "--json", str(out)], stdout=subprocess.DEVNULL, check=True)
        return json.loads(out.read_text())


def compare_at(budget: int, runs: int, seed: int, plot: Path | None) -> dict[str, Any]:
    """Every learner's figures at one budget: the five via compare, the code variant via evaluate."""
    common = ["--protocol", "split", "--runs", str(runs), "--seed", str(seed)]
    common += ["--budget", str(budget)]
    cmd = [OMTL, "compare", "landmine19", "--learners", ",".join(LEARNERS), *common]
    if plot is not None:
        cmd += ["--plot", str(plot)]
    docs = _run(cmd)
    out = {d["learner"]: d["metrics"] for d in docs}
    code = _run(
        [OMTL, "evaluate", "landmine19", "--learner", "amlc", "--param", "faithful=code", *common]
    )
    out[CODE_VARIANT] = code["metrics"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    grid = budgets()
    last = grid[-1]

    def one(b: int) -> dict[str, Any]:
        plot = RESULTS / "amlc_fig1_compare.png" if b == last else None
        figures = compare_at(b, args.runs, args.seed, plot)
        print(f"done: budget {b}", file=sys.stderr)
        return figures

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = dict(zip(grid, pool.map(one, grid)))
    names = [*LEARNERS, CODE_VARIANT]
    curves = {
        name: {
            "budget": grid,
            "accuracy_mean": [results[b][name]["accuracy_mean"] for b in grid],
            "accuracy_std": [results[b][name]["accuracy_std"] for b in grid],
            "queries_mean": [results[b][name]["queries_mean"] for b in grid],
        }
        for name in names
    }
    payload = {
        "dataset": "landmine19",
        "n_train": N_TRAIN,
        "runs": args.runs,
        "seed": args.seed,
        "curves": curves,
    }
    (RESULTS / "amlc_fig1_landmine.json").write_text(json.dumps(payload, indent=2) + "\n")
    table = markdown(curves, grid, args.runs, args.seed)
    (RESULTS / "amlc_fig1_landmine.md").write_text(table)
    print(table)
    plot(curves, RESULTS / "amlc_fig1_landmine.png", args.runs)


def markdown(
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


def plot(curves: dict[str, dict[str, list[float]]], path: Path, runs: int) -> None:
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


if __name__ == "__main__":
    main()
