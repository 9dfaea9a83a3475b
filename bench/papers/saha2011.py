"""saha2011 Table 2 and the seven-method tables (Tables 3-5), through the evaluation harness.

Every figure comes from the ``split`` protocol of :mod:`evaluation` —
the code behind ``omtl evaluate DATASET --protocol split`` — so each row equals::

    omtl evaluate DATASET --protocol split --runs R --seed S --learner NAME [--param K=V ...]

(one pass over the shuffled training split with online mistakes counted on every
round, labels consumed only when the learner queries them, then test accuracy of
the final weights; ``expected_rounds`` is set by the harness to the number of
training rounds, so EPOCH = 0.5 switches A on at the middle of the pass).

Protocol
--------
* **Table 2** (saha2011 Sec. 5.2): ``synthetic-saha``, 20 runs, seed 0, every
  learner at its defaults exactly as in the acceptance command; the key is
  ``weight_correlation`` (``corrcoef`` of the learned task weight vectors, mean
  over runs). Pass: corr(1,2) < -0.5 and |corr(3,1)|, |corr(3,2)| <= 0.3.
* **Seven-method tables** (Tables 3-5): ``synthetic-saha``, ``landmine`` and
  ``sentiment4``, 10 runs, seed 0, EPOCH = 0.5 (the default). Every learner
  appends a bias feature and L2-normalises x (docs/algorithms.md Sec. 0 default for
  the Perceptron family). Passive: stl, ipl, cmtl, batchopt, omtl-cov,
  omtl-logdet, omtl-vonneumann. Active: ``selective-sampling`` with base
  stl/ipl/cmtl and fixed b = 1, batchopt with fixed b = 1 (``sampling_b``), and
  omtl-cov/logdet/vonneumann with b = sum_j |A_{i_t, j}| (saha2011 Sec. 4).
  Extra rows give the ``cov_is_A_inverse`` reading of Eqs. 3.9/3.10.
* **eta** (no value in the paper): for omtl-logdet and omtl-vonneumann, a log
  grid ``1e-3 .. 10`` (``eta_scale = 'trace'``, i.e. eta / tr(W^T W)), chosen
  per dataset by the mean *online mistakes of the training pass* (no test
  labels) over runs with a different seed (1000, hence other splits and
  shuffles) than the reported runs (seed 0). The active variants use the eta
  chosen for the passive one. Nothing else is tuned.

Usage::

    python -m bench.papers.saha2011                 # everything (about 15 min here)
    python -m bench.papers.saha2011 --only table2
    python -m bench.papers.saha2011 --only landmine --runs 10
    python -m bench.papers.saha2011 --only cost      # events/s with A updating
    python -m bench.papers.saha2011 --report        # rebuild the markdown from the JSON

Writes ``bench/results/omtl_table2.json``, ``bench/results/omtl_<dataset>.json`` and
``bench/results/omtl_tables.md``. BLAS is pinned to one thread: the K x K
eigendecompositions are tiny, and threaded OpenBLAS is many times slower on them
on a loaded 2-core machine.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import platform
import time
from datetime import UTC, datetime
from typing import Any

import numpy as np

from bench import RESULTS
from evaluation import protocols
from evaluation.catalog import load_dataset

DATASETS = ("synthetic-saha", "landmine", "sentiment4")
PRE: dict[str, Any] = {"append_bias": True, "l2_normalize": True}
ETA_GRID = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
ETA_LEARNERS = ("omtl-logdet", "omtl-vonneumann")
TUNE_SEED = 1000
TUNE_RUNS = {"synthetic-saha": 10, "landmine": 3, "sentiment4": 3}
#: (label, learner, params): defaults first (the acceptance rows), then eta = 1 for contrast.
TABLE2_ROWS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("cmtl", "cmtl", {}),
    ("ipl", "ipl", {}),
    ("omtl-logdet", "omtl-logdet", {}),
    ("omtl-vonneumann", "omtl-vonneumann", {}),
    ("omtl-cov", "omtl-cov", {}),
    ("batchopt", "batchopt", {}),
    ("omtl-logdet, eta = 1", "omtl-logdet", {"eta": 1.0}),
    ("omtl-vonneumann, eta = 1", "omtl-vonneumann", {"eta": 1.0}),
)

#: saha2011 Table 2 (single run): corr(1,2), corr(1,3), corr(2,3).
PAPER_TABLE2 = {
    "cmtl": (-0.2030, 0.5217, 0.1371),
    "omtl-logdet": (-0.9059, 0.0003, 0.1225),
    "omtl-vonneumann": (-0.8171, 0.0322, 0.1295),
}


def run_split(
    dataset: Any, learner: str, params: dict[str, Any], *, runs: int, seed: int
) -> dict[str, Any]:
    """One ``omtl evaluate --protocol split`` document."""
    return protocols.get("split").run(dataset, learner, params, runs=runs, seed=seed, budget=None)


def _row(label: str, learner: str, params: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    m = doc["metrics"]
    return {
        "label": label,
        "learner": learner,
        "params": {k: v for k, v in params.items() if k not in PRE},
        "auto_params": doc.get("auto_params", {}),
        "accuracy_mean": m["accuracy_mean"],
        "accuracy_std": m["accuracy_std"],
        "auc_mean": m.get("auc_mean"),
        "mistakes_mean": m["mistakes_mean"],
        "mistakes_std": m["mistakes_std"],
        "mistakes_ci95": m["mistakes_ci95"],
        "queries_mean": m["queries_mean"],
        "queries_std": m["queries_std"],
    }


# ------------------------------------------------------------------ Table 2
def table2(runs: int = 20, seed: int = 0) -> dict[str, Any]:
    """saha2011 Table 2 on synthetic-saha: mean weight correlations over ``runs``."""
    ds = load_dataset("synthetic-saha")
    out: dict[str, Any] = {"dataset": ds.name, "runs": runs, "seed": seed, "rows": []}
    for label, name, params in TABLE2_ROWS:
        doc = run_split(ds, name, params, runs=runs, seed=seed)
        C = np.asarray(doc["weight_correlation"])
        passes = bool(C[0, 1] < -0.5 and abs(C[0, 2]) <= 0.3 and abs(C[1, 2]) <= 0.3)
        out["rows"].append(
            {
                "label": label,
                "learner": name,
                "params": params,
                "weight_correlation": C.tolist(),
                "relation_matrix": doc.get("relation_matrix"),
                "accuracy_mean": doc["metrics"]["accuracy_mean"],
                "criterion_holds": passes,
                "paper": PAPER_TABLE2.get(label),
            }
        )
        print(f"table2 {label:24s} corr12 {C[0, 1]:+.4f} corr13 {C[0, 2]:+.4f} "
              f"corr23 {C[1, 2]:+.4f} holds={passes}", flush=True)  # fmt: skip
    return out


# ------------------------------------------------------------------ eta tuning
def tune_eta(ds: Any, dataset: str) -> dict[str, Any]:
    """Grid over eta for the two divergence learners; pick the fewest training mistakes."""
    runs = TUNE_RUNS[dataset]
    chosen: dict[str, float] = {}
    grid: dict[str, list[dict[str, float]]] = {}
    for name in ETA_LEARNERS:
        grid[name] = []
        for eta in ETA_GRID:
            doc = run_split(ds, name, {**PRE, "eta": eta}, runs=runs, seed=TUNE_SEED)
            m = doc["metrics"]
            grid[name].append(
                {
                    "eta": eta,
                    "mistakes_mean": m["mistakes_mean"],
                    "accuracy_mean": m["accuracy_mean"],
                }
            )
            print(
                f"tune {dataset} {name} eta={eta:g}: mistakes {m['mistakes_mean']:.1f}", flush=True
            )
        chosen[name] = min(grid[name], key=lambda r: r["mistakes_mean"])["eta"]
    return {"seed": TUNE_SEED, "runs": runs, "grid": grid, "chosen": chosen}


# ------------------------------------------------------------------ seven-method tables
def method_rows(eta: dict[str, float], n_tasks: int) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(mode, label, learner, params) of every row of the seven-method table."""
    active_base = {"b": 1.0}
    rows: list[tuple[str, str, str, dict[str, Any]]] = [
        ("passive", "STL", "stl", {}),
        ("passive", "IPL", "ipl", {}),
        ("passive", "CMTL", "cmtl", {}),
        ("passive", "BATCHOPT", "batchopt", {}),
        ("passive", "OMTLCOV", "omtl-cov", {}),
        ("passive", "OMTLLOG", "omtl-logdet", {"eta": eta["omtl-logdet"]}),
        ("passive", "OMTLVON", "omtl-vonneumann", {"eta": eta["omtl-vonneumann"]}),
        ("passive", "BATCHOPT (A^-1 reading)", "batchopt", {"cov_is_A_inverse": True}),
        ("passive", "OMTLCOV (A^-1 reading)", "omtl-cov", {"cov_is_A_inverse": True}),
        (
            "passive",
            "OMTLLOG, EPOCH = 0.1",
            "omtl-logdet",
            {"eta": eta["omtl-logdet"], "epoch": 0.1},
        ),
        (
            "passive",
            "OMTLCOV (A^-1 reading), EPOCH = 0.1",
            "omtl-cov",
            {"cov_is_A_inverse": True, "epoch": 0.1},
        ),
    ]
    for base, label in (("stl", "STL"), ("ipl", "IPL"), ("cmtl", "CMTL")):
        rows.append(("active", label, "selective-sampling", {"base": base, **active_base}))
    # During priming OMTL's A = I/K gives b = 1/K against margins K times IPL's, i.e. the
    # fixed-b rule on IPL with b = 1/K^2: this row separates that scale effect from A.
    rows.append(
        (
            "active",
            "IPL, b = 1/K^2 (OMTL's priming b)",
            "selective-sampling",
            {"base": "ipl", "b": 1.0 / n_tasks**2},
        )
    )
    rows += [
        ("active", "BATCHOPT", "batchopt", {"active": True, "sampling_b": 1.0}),
        ("active", "OMTLCOV", "omtl-cov", {"active": True}),
        ("active", "OMTLLOG", "omtl-logdet", {"active": True, "eta": eta["omtl-logdet"]}),
        ("active", "OMTLVON", "omtl-vonneumann", {"active": True, "eta": eta["omtl-vonneumann"]}),
        (
            "active",
            "OMTLCOV (A^-1 reading)",
            "omtl-cov",
            {"active": True, "cov_is_A_inverse": True},
        ),
    ]
    return rows


def ipl_weight_cosines(ds: Any) -> dict[str, float]:
    """Cosines between the task weight vectors of ipl after one pass over a random half.

    What W^T W can tell the OMTL updates about task relatedness (rows: a seed-0
    permutation's first half; bias and L2 normalisation as in the tables).
    """
    from learners import make

    model = make("ipl", n_features=ds.n_features, n_tasks=ds.n_tasks, **PRE)
    idx = np.random.default_rng(0).permutation(ds.n)[: ds.n // 2]
    for start in range(0, idx.shape[0], 128):
        part = idx[start : start + 128]
        model.learn_many(ds.X[part], ds.y[part], ds.task[part])
    W = model.task_weights()
    assert W is not None
    norms = np.linalg.norm(W, axis=1)
    cos = (W @ W.T) / np.outer(norms, norms)
    off = cos[~np.eye(ds.n_tasks, dtype=bool)]
    return {"mean": float(off.mean()), "min": float(off.min()), "max": float(off.max())}


def dataset_table(dataset: str, runs: int, seed: int = 0) -> dict[str, Any]:
    """Tune eta, then every row of the seven-method table on ``dataset``."""
    ds = load_dataset(dataset)
    tuning = tune_eta(ds, dataset)
    out: dict[str, Any] = {
        "dataset": ds.name,
        "n_rows": ds.n,
        "n_tasks": ds.n_tasks,
        "n_features": ds.n_features,
        "runs": runs,
        "seed": seed,
        "preprocessing": PRE,
        "tuning": tuning,
        "rows": [],
    }
    out["ipl_weight_cosines"] = ipl_weight_cosines(ds)
    for mode, label, learner, params in method_rows(tuning["chosen"], ds.n_tasks):
        start = time.perf_counter()
        doc = run_split(ds, learner, {**PRE, **params}, runs=runs, seed=seed)
        row = _row(label, learner, params, doc)
        row["mode"] = mode
        out["rows"].append(row)
        print(f"{dataset} {mode:7s} {label:24s} acc {row['accuracy_mean']:.4f} "
              f"mistakes {row['mistakes_mean']:.1f} queries {row['queries_mean']:.0f} "
              f"({time.perf_counter() - start:.0f}s)", flush=True)  # fmt: skip
    return out


# ------------------------------------------------------------------ per-event cost
COST_STREAMS = ((10, 100, False, 20_000), (100, 100, False, 4_000), (10, 100_000, True, 10_000))
COST_LEARNERS = ("ipl", "cmtl", "omtl-logdet", "omtl-vonneumann", "omtl-cov", "batchopt")


def cost() -> dict[str, Any]:
    """Predict + learn events/s with A updated on every mistake from the first round.

    ``python -m bench.throughput`` sets ``expected_rounds`` to its whole stream but times a
    prefix, which can end before EPOCH; here ``epoch_rounds = 0`` so every mistake
    pays the A update (O(K nnz + K^3)).
    """
    from bench.perf.throughput_streams import make_stream
    from learners import make
    from learners.inputs import Batch

    out: dict[str, Any] = {"rows": []}
    for K, d, sparse, n in COST_STREAMS:
        stream = make_stream(K, d, n, sparse=sparse, seed=0)
        vecs = Batch.from_input(stream.X, d).rows()
        y, task = stream.y.tolist(), stream.task.tolist()
        for name in COST_LEARNERS:
            extra = {} if name in ("ipl", "cmtl") else {"epoch_rounds": 0}
            model = make(name, n_features=d, n_tasks=K, seed=0, **extra)
            start = time.perf_counter()
            for v, label, t in zip(vecs, y, task, strict=True):
                model.decision_one(v, t)
                model.learn_one(v, label, t)
            spent = time.perf_counter() - start
            row = {
                "stream": stream.label,
                "K": K,
                "d": d,
                "learner": name,
                "events": n,
                "events_per_s": n / spent,
                "mistake_rate": model.n_mistakes_ / n,  # type: ignore[attr-defined]
                "a_updates": int(getattr(model, "n_a_updates_", 0)),
            }
            out["rows"].append(row)
            print(f"cost {stream.label:14s} {name:16s} {row['events_per_s']:9,.0f} ev/s "
                  f"mistakes {row['mistake_rate']:.1%} A updates {row['a_updates']}", flush=True)  # fmt: skip
    return out


# ------------------------------------------------------------------ report
def _fmt_corr(C: list[list[float]]) -> str:
    return f"{C[0][1]:+.4f} | {C[0][2]:+.4f} | {C[1][2]:+.4f}"


def report() -> str:
    """The markdown of every result file present."""
    lines = [
        "# saha2011 tables (OMTL): Table 2 and the seven-method tables",
        "",
        f"Generated by `python -m bench.papers.saha2011` on {platform.node()} ({platform.machine()}, "
        f"Python {platform.python_version()}, numpy {np.__version__}), "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Protocol: see the script's docstring.",
        "",
    ]
    t2 = RESULTS / "omtl_table2.json"
    if t2.exists():
        doc = json.loads(t2.read_text())
        lines += [
            f"## Table 2: weight correlations on synthetic-saha ({doc['runs']} runs, defaults)",
            "",
            "Mean over runs of `weight_correlation` (corrcoef of the learned task weight "
            "vectors). Criterion: corr(1,2) < -0.5 and |corr(1,3)|, |corr(2,3)| <= 0.3.",
            "",
            "| learner | corr(1,2) | corr(1,3) | corr(2,3) | criterion | test acc | paper (1 run) |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in doc["rows"]:
            paper = r["paper"]
            ptxt = " / ".join(f"{v:+.4f}" for v in paper) if paper else "-"
            lines.append(
                f"| {r['label']} | {_fmt_corr(r['weight_correlation'])} | "
                f"{'holds' if r['criterion_holds'] else 'fails'} | {r['accuracy_mean']:.4f} | "
                f"{ptxt} |"
            )
        lines.append("")
    for dataset in DATASETS:
        path = RESULTS / f"omtl_{dataset}.json"
        if not path.exists():
            continue
        doc = json.loads(path.read_text())
        lines += _dataset_section(doc)
    path = RESULTS / "omtl_cost.json"
    if path.exists():
        lines += _cost_section(json.loads(path.read_text()))
    lines += ANALYSIS.strip("\n").splitlines()
    return "\n".join(lines) + "\n"


#: Why the figures look as they do (the mechanisms; the figures are in the sections above).
ANALYSIS = """
## Analysis

**Table 2 holds, but not because of the learned A.** omtl-logdet and omtl-vonneumann meet
the criterion at their defaults; so does ipl, whose rows never interact. On synthetic-saha
the anti-correlation of tasks 1 and 2 is in the data, and independent Perceptrons recover
it; cmtl fails because its fixed positive coupling pulls every task towards the others
(the effect the paper reports). With eta = 1 the von Neumann update drives A to the
eigenvalue floor within a few dozen updates: A^{-1} becomes nearly rank one, tasks 1 and 2
are updated as one vector with opposite signs (correlation exactly -1) and accuracy drops.
That is why the defaults are the small etas the tuning grid prefers.

**Passive mistakes: the claim holds against cmtl only on synthetic-saha, never against
ipl.** On landmine and sentiment4 the tasks are positively related (stl and cmtl make the
fewest mistakes), and omtl-logdet / omtl-vonneumann stay within the confidence interval of
ipl. What the figures show: (1) the learned coupling is weak: on landmine and sentiment4
the eta chosen by training mistakes is at the small end of the grid and every larger eta
costs mistakes; (2) W^T W is a poor
witness of relatedness: on sentiment4, where pooling everything (stl) is best, the cosines
between ipl's task weight vectors average about 0.2, so the LogDet step
A^{-1} += eta W^T W / tr(W^T W) mostly grows each task's own rate (the diagonal) instead of
sharing; (3) EPOCH is not the bottleneck for LogDet: switching at EPOCH = 0.1 leaves its
mistakes unchanged (extra rows), while cmtl shares from the first round. omtl-cov and
batchopt read literally (A = covariance, learning rates from its inverse, a precision
matrix, whose off-diagonal entries are negative for positively correlated tasks) push
related tasks apart and make many more mistakes on landmine; the cov_is_A_inverse reading
removes most of that loss and, switched on early (EPOCH = 0.1), comes closest to cmtl on
sentiment4, still above it.

**Active: fewer labels, but not at similar accuracy, and not because of A.** The OMTL active
rule (b = sum_j |A_{i,j}|) asks for far fewer labels than active cmtl, as the paper says,
but its accuracy and AUC are clearly lower. The control row "IPL, b = 1/K^2" (selective
sampling on ipl with a fixed b) reproduces the queries, mistakes and accuracy of active
omtl-logdet/vonneumann almost exactly: during priming A = I/K gives b = 1/K while
A^{-1} = K I scales every margin by K, so the query probability is 1/(1 + K^2 |r_ipl|).
Few labels mean few mistakes learned, hence few A updates, and A hardly moves before the
pass ends. The reduction is a matter of scale, not of learned task relations. The literal
omtl-cov and batchopt (fixed b = 1) active variants fail on landmine (below 50% accuracy
with a few hundred labels or fewer): their learning rates come from the inverse of a
nearly singular covariance, the steps and hence the margins are large, and almost no
labels are asked for.

**Landmine accuracy** is below the 94% of always answering "no landmine" for every method
(6% positives); its AUC column is the more informative figure.
"""


def _cost_section(doc: dict[str, Any]) -> list[str]:
    lines = [
        "## Per-event cost with A updated on every mistake (`--only cost`)",
        "",
        "decision_one + learn_one per event, one BLAS thread, OMTL learners with "
        "`epoch_rounds = 0`; streams of `bench/perf/throughput_streams.py`.",
        "",
        "| stream | learner | events/s | mistake rate | A updates |",
        "|---|---|---|---|---|",
    ]
    for r in doc["rows"]:
        lines.append(
            f"| {r['stream']} | {r['learner']} | {r['events_per_s']:,.0f} | "
            f"{100 * r['mistake_rate']:.1f}% | {r['a_updates']} |"
        )
    return [*lines, ""]


def _dataset_section(doc: dict[str, Any]) -> list[str]:
    tuning = doc["tuning"]
    lines = [
        f"## {doc['dataset']} ({doc['n_rows']} rows, {doc['n_tasks']} tasks, "
        f"{doc['n_features']} features; {doc['runs']} runs, seed {doc['seed']}, EPOCH = 0.5)",
        "",
        f"eta chosen on seed {tuning['seed']} ({tuning['runs']} runs) by training-pass mistakes: "
        + ", ".join(f"{k} eta = {v:g}" for k, v in tuning["chosen"].items())
        + ". Grid (mistakes): "
        + "; ".join(
            f"{k}: " + ", ".join(f"{g['eta']:g} -> {g['mistakes_mean']:.1f}" for g in v)
            for k, v in tuning["grid"].items()
        ),
        "",
    ]
    cos = doc.get("ipl_weight_cosines")
    if cos:
        lines += [
            f"Cosines between ipl's task weight vectors after one pass over a random half of the "
            f"rows: mean {cos['mean']:.3f}, min {cos['min']:.3f}, max {cos['max']:.3f}.",
            "",
        ]
    n_train = next(r["queries_mean"] for r in doc["rows"] if r["label"] == "IPL")
    for mode in ("passive", "active"):
        rows = [r for r in doc["rows"] if r["mode"] == mode]
        lines += [
            f"### {mode}",
            "",
            "| method | learner | params | test accuracy | AUC | online mistakes | queries "
            "(% reduction) |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            red = f" ({100 * (1 - r['queries_mean'] / n_train):.1f}%)"
            params = ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "-"
            auc = f"{r['auc_mean']:.4f}" if r.get("auc_mean") is not None else "-"
            lines.append(
                f"| {r['label']} | {r['learner']} | {params} | "
                f"{100 * r['accuracy_mean']:.2f} (+-{100 * r['accuracy_std']:.2f}) | {auc} | "
                f"{r['mistakes_mean']:.1f} (+-{r['mistakes_std']:.1f}) | "
                f"{r['queries_mean']:.0f}{red} |"
            )
        lines.append("")
    lines += _claims(doc)
    return lines


def _claims(doc: dict[str, Any]) -> list[str]:
    """The paper's claims, checked on this dataset's figures."""
    by = {(r["mode"], r["label"]): r for r in doc["rows"]}
    lines = ["### The paper's claims on this dataset", ""]
    for ours in ("OMTLLOG", "OMTLCOV"):
        o = by[("passive", ours)]
        for base in ("CMTL", "IPL"):
            b = by[("passive", base)]
            diff = o["mistakes_mean"] - b["mistakes_mean"]
            verdict = "fewer" if diff < 0 else "not fewer"
            lines.append(
                f"- passive {ours} vs {base}: {o['mistakes_mean']:.1f} vs {b['mistakes_mean']:.1f} "
                f"mistakes ({diff:+.1f}; 95% CI half-widths {o['mistakes_ci95']:.1f} / "
                f"{b['mistakes_ci95']:.1f}): {verdict}."
            )
    control = next(r for r in doc["rows"] if r["label"].startswith("IPL, b = 1/K^2"))
    for ours in ("OMTLLOG", "OMTLVON"):
        o = by[("active", ours)]
        lines.append(
            f"- active {ours} vs the fixed-b control (IPL, b = 1/K^2): {o['queries_mean']:.0f} vs "
            f"{control['queries_mean']:.0f} queries, accuracy {100 * o['accuracy_mean']:.2f} vs "
            f"{100 * control['accuracy_mean']:.2f}, mistakes {o['mistakes_mean']:.1f} vs "
            f"{control['mistakes_mean']:.1f}."
        )
    c = by[("active", "CMTL")]
    for ours in ("OMTLLOG", "OMTLCOV"):
        o = by[("active", ours)]
        ratio = o["queries_mean"] / c["queries_mean"] if c["queries_mean"] else float("nan")
        lines.append(
            f"- active {ours} vs CMTL: {o['queries_mean']:.0f} vs {c['queries_mean']:.0f} "
            f"queries (ratio {ratio:.2f}) at accuracy {100 * o['accuracy_mean']:.2f} vs "
            f"{100 * c['accuracy_mean']:.2f}."
        )
    lines.append("")
    return lines


def main(argv: list[str] | None = None) -> None:
    """Command line entry (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="table2, cost, or one dataset name")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--report", action="store_true", help="only rebuild the markdown")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    if not args.report:
        if args.only in (None, "table2"):
            doc = table2()
            (RESULTS / "omtl_table2.json").write_text(json.dumps(doc, indent=1))
        if args.only in (None, "cost"):
            (RESULTS / "omtl_cost.json").write_text(json.dumps(cost(), indent=1))
        for dataset in DATASETS:
            if args.only in (None, dataset):
                doc = dataset_table(dataset, args.runs)
                (RESULTS / f"omtl_{dataset}.json").write_text(json.dumps(doc, indent=1))
    (RESULTS / "omtl_tables.md").write_text(report())
    print(f"wrote {RESULTS / 'omtl_tables.md'}")


if __name__ == "__main__":
    main()
