"""ruvolo2014 (ELLA): the lifelong learning curves of Fig. 2, and two studies of their outcome.

Runs the ``lifelong`` protocol (evaluation/protocols/lifelong.py) for
ella, ella-svd, ella-incremental and ella-dual on one dataset, writes the JSON
documents and a plot of the curves to bench/results/, and prints the final
figures::

    python -m bench.papers.ruvolo_ella synthetic-ella --runs 100
    python -m bench.papers.ruvolo_ella school:train=0.5 --runs 10
    python -m bench.papers.ruvolo_ella landmine --runs 100

Hyperparameters. ruvolo2014 chose ``lambda`` and ``k`` per method by a grid
search (``mu = e^-5`` for all). With ``--grid`` this script does the same (``k`` in
GRID_K, ``lambda`` in GRID_LAM, used both as the ridge of the base learner and as
ELLA's ``lambda`` on L) with ``--grid-runs`` trials drawn from a *different* seed than
the reported trials, and reports the chosen values; without it every method uses
``--k`` and ``--lam``.

``--ella-icml`` runs ``ella`` in the ICML-2013 / MATLAB form of docs/algorithms.md Sec. 8
#12 (``ridge_form='icml'``): its ``lambda`` (grid or ``--lam``) is then ELLA's
``lambda`` on ``||L||_F`` only, and the base learner keeps the MATLAB ridge
``e^-5`` (``D_t = (X^T X + ridge I') / n_t``, bias free). The other three methods
keep the AAAI form (``lambda`` as the ridge inside ``D_t``, Eq. 7).

The default grid is the paper's: ``k`` in 1..10 and ``lambda`` in e^-5..e^5.
Datasets whose last column is already the bias (synthetic-ella, school) are run
with ``append_bias=False, last_is_bias=True``, so the learners see the paper's d
(13 on synthetic-ella) and not a second constant column.

``--select`` names the grid criterion. ruvolo2014 chose the values "to maximize the
average performance when learning using all tasks". ``area`` (default) reads that as
the mean of the whole learning curve (the protocol's ``curve_area``: one setting that
serves the lifelong run from the first task to the last), ``final`` as the figure
after the last task only. bench/results/ella_notes.md reports both.

``--grid-from FILE`` takes the grid scores from an earlier results file of the same
dataset (its ``summary.grid``, which holds both criteria) instead of running the grid,
so the other reading costs only the reported trials.

``--regenerate`` (generated datasets only) draws a fresh dataset for every trial
(dataset ``seed`` = trial index; the tuning trials use seeds from 1000 on), one
reading of ruvolo2014's "100 random tasks ... averaged over 100 trials"; without
it every trial re-splits and re-orders the one dataset named on the command line.

Two studies read or re-run the curves' setting (bench/results/ella_notes.md, items 3-4):

``--paired FILE`` compares ``ella`` with the other three methods trial by trial in a
results file of ``--regenerate`` (whose per-method documents keep every trial's final
figure under ``finals``; trial ``r`` of every method ran on the same dataset, split and
task order) and prints, for each other method, the mean of ``final(ella) - final(other)``
with its 95% t-interval, how many trials ``ella`` won, and which method was best in each
trial (committed as ``ella_synthetic-ella_paper_grid_regen[_area]_paired.json``)::

    python -m bench.papers.ruvolo_ella --paired bench/results/ella_synthetic-ella_paper_grid_regen.json

``--recode`` asks why ELLA trails ELLA-SVD on synthetic-ella: frozen codes or a worse
basis? It runs the lifelong presentation (random task order, each task's training half
as one batch, 50/50 split per task) and, after the last task, scores every task's test
half twice: with the model's own codes (what the ``lifelong`` protocol reports) and with
every code recomputed by Eq. (11) over the *final* basis (``code_for``, which changes
nothing). ELLA never revisits the code of a task it has learned; ELLA-SVD rewrites the
codes of the tasks sharing an updated atom. If the re-coded ELLA closes the gap, the gap
comes from the frozen codes, not from the basis (prints the JSON committed as
``ella_recode.json``)::

    python -m bench.papers.ruvolo_ella --recode --runs 20
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

import learners
from bench import RESULTS
from evaluation.catalog import load_dataset
from evaluation.common import aggregate
from evaluation.compare import plot_curves
from evaluation.dataset import Dataset
from evaluation.protocols import lifelong
from learners.ella.model import BasisLearner

LEARNERS = ("ella", "ella-svd", "ella-incremental", "ella-dual")
#: ruvolo2014's grid: k in {1, ..., 10}, lambda in {e^-5, ..., e^5}.
GRID_K = tuple(range(1, 11))
GRID_LAM = tuple(float(np.exp(e)) for e in range(-5, 6))
#: First dataset seed of the tuning trials with --regenerate (reported trials use 0, 1, ...).
TUNING_DATA_SEED = 1000
MU = float(np.exp(-5))
#: The base learner's ridge of the ELLA MATLAB code (docs/algorithms.md Sec. 4.3 defaults).
MATLAB_RIDGE = float(np.exp(-5))
MATRICES = (
    "relation_matrix",
    "weight_correlation",
    "relation_matrix_last",
    "weight_correlation_last",
)
STATS = ("mean", "std", "ci95")


def final_value(doc: dict[str, Any]) -> float:
    """The last point of the curve (-rMSE or AUC; higher is better)."""
    curve = doc["curve"]
    return float(curve[list(curve)[1]][-1])


def curve_area(doc: dict[str, Any]) -> float:
    """The lifelong protocol's ``curve_area``: the curve's mean over all steps."""
    return float(doc["metrics"]["curve_area_mean"])


Job = tuple[str, str, dict[str, Any], int, int, int | None]


def with_seed(spec: str, seed: int) -> str:
    """The dataset spec with its generator ``seed`` set."""
    return spec + ("," if ":" in spec else ":") + f"seed={seed}"


def has_bias_column(dataset: Dataset) -> bool:
    """Whether the dataset's last feature is a constant 1 (a bias column of its own)."""
    last = dataset.X[:, -1]
    last = np.asarray(last.todense() if hasattr(last, "todense") else last).ravel()
    return bool(np.all(last == 1.0))


def evaluate(job: Job) -> dict[str, Any]:
    """One protocol run (a process-pool job).

    With ``data_seed`` None, ``runs`` trials of the one dataset ``spec``; otherwise
    trial ``r`` runs on a fresh dataset drawn with generator seed ``data_seed + r``
    and the per-trial curves and metrics are aggregated as the protocol does.
    """
    spec, learner, params, runs, seed, data_seed = job
    start = time.perf_counter()
    if data_seed is None:
        doc = lifelong.run(load_dataset(spec), learner, params, runs=runs, seed=seed, budget=None)
    else:
        docs = [
            lifelong.run(
                load_dataset(with_seed(spec, data_seed + r)),
                learner,
                params,
                runs=1,
                seed=seed + r,
                budget=None,
            )
            for r in range(runs)
        ]
        doc = combine(docs, spec)
    doc["seconds"] = time.perf_counter() - start
    return doc


def combine(docs: list[dict[str, Any]], spec: str) -> dict[str, Any]:
    """One document from one-trial documents on regenerated datasets (mean, std, 95% CI)."""
    curve0 = docs[0]["curve"]
    x_key, y_key = list(curve0)[:2]
    figure = y_key.removesuffix("_mean")
    steps = [
        aggregate([{figure: float(d["curve"][y_key][i])} for d in docs])
        for i in range(len(curve0[x_key]))
    ]
    finals = [{k.removesuffix("_mean"): v for k, v in d["metrics"].items()} for d in docs]
    metrics = aggregate(
        [{k: v for k, v in f.items() if not k.endswith(("_std", "_ci95"))} for f in finals]
    )
    out = {key: value for key, value in docs[0].items() if key not in ("per_task", *MATRICES)}
    out.update(
        dataset=f"{spec} (regenerated per trial)",
        runs=len(docs),
        metrics=metrics,
        curve={
            x_key: curve0[x_key],
            **{f"{figure}_{s}": [step[f"{figure}_{s}"] for step in steps] for s in STATS},
        },
        finals=[float(d["curve"][y_key][-1]) for d in docs],
    )
    return out


def params_for(
    kind: str,
    k: int,
    lam: float,
    first_k: bool = False,
    icml: bool = False,
    data_bias: bool = False,
) -> dict[str, Any]:
    """The learner parameters of one grid point (``icml``: ELLA's ICML / MATLAB form;
    ``data_bias``: the data's last column is the bias, so none is appended)."""
    base = "linear" if kind == "regression" else "logistic"
    ridge = MATLAB_RIDGE if icml else lam
    out: dict[str, Any] = {"base_learner": base, "k": k, "lam": lam, "ridge": ridge, "mu": MU}
    if data_bias:
        out["append_bias"] = False
        out["last_is_bias"] = True
    if icml:
        out["ridge_form"] = "icml"
    if first_k:
        out["init_first_k"] = True
    return out


def run_grid(
    pool: ProcessPoolExecutor,
    args: argparse.Namespace,
    point: Callable[[str, int, float], dict[str, Any]],
    tune_data: int | None,
) -> dict[str, list[dict[str, Any]]]:
    """Every method at every grid point on the tuning trials: last point and curve area."""
    grid_k = [int(v) for v in args.grid_k.split(",")]
    grid_lam = [float(v) for v in args.grid_lam.split(",")]
    points = [(k, lam) for k in grid_k for lam in grid_lam]
    jobs: list[Job] = [
        (args.dataset, name, point(name, k, lam), args.grid_runs, args.seed + 1000, tune_data)
        for name in LEARNERS
        for k, lam in points
    ]
    scores: dict[str, list[dict[str, Any]]] = {}
    for job, doc in zip(jobs, pool.map(evaluate, jobs), strict=True):
        name, params = job[1], job[2]
        entry = {
            "k": params["k"],
            "lam": params["lam"],
            "final": final_value(doc),
            "area": curve_area(doc),
        }
        scores.setdefault(name, []).append(entry)
        print(name, entry, f"{doc['seconds']:.1f}s", file=sys.stderr, flush=True)
    return scores


def stored_grid(path: Path, dataset: str, criterion: str) -> dict[str, list[dict[str, Any]]]:
    """The grid scores of an earlier results file of the same dataset (``--grid-from``)."""
    summary = json.loads(path.read_text())["summary"]
    if summary["dataset"] != dataset:
        raise SystemExit(f"{path} holds a grid of {summary['dataset']!r}, not {dataset!r}")
    grid: dict[str, list[dict[str, Any]]] = summary["grid"]
    if not grid:
        raise SystemExit(f"{path} holds no grid scores")
    if any(criterion not in entry for scores in grid.values() for entry in scores):
        raise SystemExit(f"{path} has no {criterion!r} score for every grid point")
    return grid


def curves(args: argparse.Namespace) -> None:
    """The four methods' curves on ``args.dataset``: grid, reported trials, files, summary."""
    first = load_dataset(args.dataset)
    kind, data_bias = first.kind, has_bias_column(first)

    def point(name: str, k: int, lam: float) -> dict[str, Any]:
        icml = args.ella_icml and name == "ella"
        return params_for(kind, k, lam, args.init_first_k, icml, data_bias)

    tune_data = TUNING_DATA_SEED if args.regenerate else None
    report_data = 0 if args.regenerate else None

    chosen = {name: point(name, args.k, args.lam) for name in LEARNERS}
    grid_scores: dict[str, list[dict[str, Any]]] = {}
    with ProcessPoolExecutor(args.workers) as pool:
        if args.grid_from is not None:
            grid_scores = stored_grid(args.grid_from, args.dataset, args.select)
        elif args.grid:
            grid_scores = run_grid(pool, args, point, tune_data)
        for name, scores in grid_scores.items():
            best = max(scores, key=lambda g: g[args.select])
            chosen[name] = point(name, best["k"], best["lam"])
        final_jobs: list[Job] = [
            (args.dataset, name, chosen[name], args.runs, args.seed, report_data)
            for name in LEARNERS
        ]
        docs = list(pool.map(evaluate, final_jobs))
    stem = "ella_" + args.dataset.split(":")[0] + (f"_{args.tag}" if args.tag else "")
    RESULTS.mkdir(exist_ok=True)
    summary = {
        "dataset": args.dataset,
        "command": "python -m bench.papers.ruvolo_ella " + " ".join(sys.argv[1:]),
        "runs": args.runs,
        "seed": args.seed,
        "regenerate": args.regenerate,
        "select": args.select,
        "grid_from": str(args.grid_from) if args.grid_from else None,
        "data_bias_column": data_bias,
        "grid": grid_scores,
        "chosen": chosen,
        "final": {doc["learner"]: final_value(doc) for doc in docs},
        "final_ci95": {
            doc["learner"]: float(doc["curve"][list(doc["curve"])[3]][-1]) for doc in docs
        },
        "seconds": {doc["learner"]: doc["seconds"] for doc in docs},
    }
    plot_curves(docs, RESULTS / f"{stem}.png")
    for doc in docs:  # the K x K matrices would make the file megabytes; curves and metrics stay
        for key in MATRICES:
            doc.pop(key, None)
    (RESULTS / f"{stem}.json").write_text(json.dumps({"summary": summary, "documents": docs}))
    print(json.dumps(summary, indent=1))


# ------------------------------------------------------------------ --paired
def paired(finals: dict[str, np.ndarray], reference: str = "ella") -> dict[str, Any]:
    """``reference - other`` per trial: mean, 95% half-width, wins; best method per trial."""
    ref = finals[reference]
    n = ref.shape[0]
    t = float(stats.t.ppf(0.975, n - 1)) if n > 1 else float("nan")
    out: dict[str, Any] = {"trials": n, "differences": {}}
    for name, values in finals.items():
        if name == reference:
            continue
        diff = ref - values
        half = t * float(diff.std(ddof=1)) / np.sqrt(n) if n > 1 else float("nan")
        out["differences"][name] = {
            "mean": float(diff.mean()),
            "ci95": half,
            "reference_better": int((diff > 0).sum()),
        }
    names = list(finals)
    best = np.argmax(np.stack([finals[k] for k in names]), axis=0)
    out["best_per_trial"] = {k: int((best == i).sum()) for i, k in enumerate(names)}
    out["median"] = {k: float(np.median(v)) for k, v in finals.items()}
    return out


def paired_from_file(path: Path) -> dict[str, Any]:
    """The paired figures of one results file of ``--regenerate``."""
    docs = json.loads(path.read_text())["documents"]
    if not all("finals" in d for d in docs):
        raise SystemExit("no per-trial finals in this file (run the curves with --regenerate)")
    return paired({d["learner"]: np.asarray(d["finals"], dtype=np.float64) for d in docs})


# ------------------------------------------------------------------ --recode
#: The data's 13th column is the bias: no second one is appended (d = 13, as in the paper).
OWN_BIAS: dict[str, Any] = {"append_bias": False, "last_is_bias": True}
ELLA_ICML: dict[str, Any] = {"lam": MATLAB_RIDGE, "ridge": MATLAB_RIDGE, "ridge_form": "icml"}
#: label -> (learner, params): the choices of the paper's grid in
#: bench/results/ella_synthetic-ella_paper_grid.json (ella k = 7, ella-svd k = 6), and
#: ella at the true k = 6 (the choice of the grid with regenerated datasets).
RECODE_SETUPS: dict[str, tuple[str, dict[str, Any]]] = {
    "ella k=7": ("ella", {"k": 7, **ELLA_ICML, **OWN_BIAS}),
    "ella k=6": ("ella", {"k": 6, **ELLA_ICML, **OWN_BIAS}),
    "ella-svd k=6": ("ella-svd", {"k": 6, "lam": MATLAB_RIDGE, "ridge": MATLAB_RIDGE, **OWN_BIAS}),
}


def recode_run(name: str, params: dict[str, Any], run: int) -> tuple[float, float]:
    """Final mean -rMSE with the model's codes and with codes over the final basis."""
    data = load_dataset("synthetic-ella")
    rng = np.random.default_rng(run)
    T = data.n_tasks
    X = np.asarray(data.X)
    model = learners.make(name, n_features=data.n_features, n_tasks=T, seed=run, mu=MU, **params)
    assert isinstance(model, BasisLearner)
    split = []
    for t in range(T):
        rows = rng.permutation(np.flatnonzero(data.task == t))
        split.append((rows[: rows.size // 2], rows[rows.size // 2 :]))
    for t in rng.permutation(T).tolist():
        train = split[t][0]
        model.learn_many(X[train], data.y[train], t)
    own, recoded = [], []
    for t in range(T):
        train, test = split[t]
        Xt = X[test]
        w_own = model.basis() @ model.codes()[t]
        _, w_new = model.code_for(model.theta_[t], model.D_[t])
        own.append(np.sqrt(np.mean((Xt @ w_own - data.y[test]) ** 2)))
        recoded.append(np.sqrt(np.mean((Xt @ w_new - data.y[test]) ** 2)))
    return -float(np.mean(own)), -float(np.mean(recoded))


def recode_study(runs: int) -> dict[str, Any]:
    """Mean and 95% CI half-width of both figures per setup."""
    out: dict[str, Any] = {}
    for label, (name, params) in RECODE_SETUPS.items():
        pairs = np.array([recode_run(name, params, r) for r in range(runs)])
        half = 1.96 * pairs.std(axis=0, ddof=1) / np.sqrt(runs)
        out[label] = {
            "own_codes": [float(pairs[:, 0].mean()), float(half[0])],
            "recoded_final_basis": [float(pairs[:, 1].mean()), float(half[1])],
        }
    return {"runs": runs, "params": RECODE_SETUPS, "final_neg_rmse": out}


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, run, write and print."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "dataset", nargs="?", help="the dataset of the curves (not with --paired / --recode)"
    )
    ap.add_argument("--runs", type=int, help="trials (default 10; 20 with --recode)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=6)
    ap.add_argument("--lam", type=float, default=float(np.exp(-5)))
    ap.add_argument("--grid", action="store_true")
    ap.add_argument("--grid-runs", type=int, default=3)
    ap.add_argument("--grid-k", default=",".join(map(str, GRID_K)), help="comma-separated k values")
    ap.add_argument(
        "--grid-lam", default=",".join(map(str, GRID_LAM)), help="comma-separated lambda values"
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tag", default="")
    ap.add_argument(
        "--ella-icml",
        action="store_true",
        help="ella in the ICML / MATLAB form (lambda on ||L||_F only, ridge e^-5 inside D / n)",
    )
    ap.add_argument(
        "--init-first-k", action="store_true", help="start L from the first k task models"
    )
    ap.add_argument(
        "--regenerate",
        action="store_true",
        help="a fresh generated dataset per trial (generator seed = trial index)",
    )
    ap.add_argument(
        "--grid-from",
        type=Path,
        help="choose from the grid scores of an earlier results JSON instead of running the grid",
    )
    ap.add_argument(
        "--select",
        choices=("final", "area"),
        default="area",
        help="grid criterion: the curve's last point or its mean over all steps",
    )
    ap.add_argument(
        "--paired",
        type=Path,
        metavar="FILE",
        help="print the trial-by-trial comparison of a --regenerate results file and stop",
    )
    ap.add_argument(
        "--recode",
        action="store_true",
        help="print own codes against codes over the final basis (synthetic-ella) and stop",
    )
    args = ap.parse_args(argv)
    if args.paired is not None:
        print(json.dumps(paired_from_file(args.paired), indent=1))
    elif args.recode:
        print(json.dumps(recode_study(args.runs or 20), indent=1))
    elif args.dataset is None:
        ap.error("name a dataset, or give --paired FILE or --recode")
    else:
        args.runs = args.runs or 10
        curves(args)


if __name__ == "__main__":
    main()
