"""``python -m bench.quality``: online mistake rates on seven streams, then label efficiency.

Usage::

    python -m bench.quality [--quick] [--learners a,b] [--default NAME]
                            [--active-learners a,b:k=v] [--streams s1,s2]
                            [--only online|labels] [--runs 5] [--label-runs 10]
                            [--seconds 60] [--out DIR]

Writes ``quality.{md,json}``, ``quality_online.png`` and ``quality_labels.png``
to ``bench/results/`` (``quality-quick*`` with ``--quick``; the JSON is rewritten
after every stream, so an interrupted run keeps what it measured). Reads the real
datasets from ``OMTL_DATA``. See :mod:`bench.quality` for what is measured.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import learners  # noqa: E402
from bench import RESULTS  # noqa: E402
from bench.perf.throughput_peers import peer_versions  # noqa: E402
from bench.perf.throughput_report import machine, versions  # noqa: E402
from bench.quality.labels import LabelSettings, run_dataset  # noqa: E402
from bench.quality.online import OnlineSettings, run_stream  # noqa: E402
from bench.quality.ours import default_learner, passive_learners  # noqa: E402
from bench.quality.report import markdown, plot_labels, plot_online  # noqa: E402
from bench.quality.streams import STREAMS  # noqa: E402
from evaluation.common import jsonable  # noqa: E402
from learners.kernels import warm_kernels  # noqa: E402

#: Datasets of the label-efficiency curves.
LABEL_DATASETS = ("landmine19", "spam15")
#: Streams, learners and sizes of ``--quick`` (a 1-2 minute smoke run).
QUICK_STREAMS = ("synthetic-K10-d100", "landmine")
QUICK_LEARNERS = ("stl", "cmtl", "pa-individual")
QUICK_ACTIVE = ("amlc", "peer")


def _names(value: str | None) -> list[str] | None:
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small streams, few learners and runs")
    p.add_argument("--learners", help="our learners by registry name (default: every passive one)")
    p.add_argument(
        "--default", help="the default learner (default: adaptive-auto if registered, else cmtl)"
    )
    p.add_argument("--active-learners", help="active learners for the curves, NAME[:k=v;...]")
    p.add_argument("--streams", help=f"streams of the online part (default: {', '.join(STREAMS)})")
    p.add_argument("--only", choices=("online", "labels"), help="run one part")
    p.add_argument("--runs", type=int, help="shuffles of the online part (default 5)")
    p.add_argument("--label-runs", type=int, help="runs of the curves (default 10)")
    p.add_argument("--seconds", type=float, help="time limit of one tuning pass (default 60)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        help="write the results of earlier runs' JSON files (e.g. --only online and --only "
        "labels run side by side) as one, and stop",
    )
    return p.parse_args(argv)


def _active_learners(args: argparse.Namespace) -> list[str]:
    if args.active_learners:
        # ';' separates a learner's parameters on the command line (',' separates learners)
        return [n.replace(";", ",") for n in _names(args.active_learners) or []]
    if args.quick:
        return list(QUICK_ACTIVE)
    return [info.name for info in learners.available() if info.active]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and write its results."""
    args = parse_args(argv)
    if args.merge:
        return _merge(args.merge, args.out, "quality-quick" if args.quick else "quality")
    quick = args.quick
    started = time.perf_counter()
    warm_kernels()  # compiled once here: no forked measurement spends its time limit compiling
    print(f"kernels warm in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    default = args.default or default_learner()
    ours = _names(args.learners) or (list(QUICK_LEARNERS) if quick else passive_learners())
    streams = _names(args.streams) or (list(QUICK_STREAMS) if quick else list(STREAMS))
    unknown = [s for s in streams if s not in STREAMS]
    if unknown:
        raise SystemExit(f"unknown stream(s) {', '.join(unknown)}; known: {', '.join(STREAMS)}")
    online = OnlineSettings(
        learners=ours,
        default=default,
        runs=args.runs or (2 if quick else 5),
        seed=args.seed,
        quick=quick,
        vw_rates=(0.5,) if quick else (0.1, 0.5, 2.0),
        river_rates=(0.1,) if quick else (0.01, 0.1, 1.0),
        seconds=args.seconds or (10.0 if quick else 60.0),
    )
    label = LabelSettings(
        learners=_active_learners(args),
        runs=args.label_runs or (2 if quick else 10),
        seed=args.seed,
        vw_rates=(0.5,) if quick else (0.1, 0.5, 2.0),
        fractions=(0.05, 0.1, 0.25, 0.5, 1.0) if quick else LabelSettings.fractions,
    )
    stem = "quality-quick" if quick else "quality"
    command = "python -m bench.quality " + " ".join(sys.argv[1:] if argv is None else argv)
    doc: dict[str, Any] = {
        "meta": {
            "command": command.strip(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": ", ".join(f"{k} {v}" for k, v in machine().items()),
            "versions": ", ".join(f"{k} {v}" for k, v in versions(peer_versions()).items()),
            "runs": online.runs,
            "label_runs": label.runs,
            "seed": args.seed,
            "default": default,
            "learners": ours,
            "active_learners": label.learners,
        },
        "online": [],
        "labels": [],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    if args.only != "labels":
        for name in streams:
            doc["online"].append(run_stream(STREAMS[name], online))
            _write(doc, args.out, stem)
    if args.only != "online":
        for spec in LABEL_DATASETS[:1] if quick else LABEL_DATASETS:
            doc["labels"].append(run_dataset(spec, label))
            _write(doc, args.out, stem)
    _write(doc, args.out, stem, plots=True)
    print(markdown(doc))
    print(f"wrote {args.out / stem}.{{md,json}} and the plots", file=sys.stderr)
    return 0


def _merge(files: list[Path], out: Path, stem: str) -> int:
    """One results document from several runs' JSON (meta of the first, commands of all)."""
    docs = [json.loads(f.read_text()) for f in files]
    doc = docs[0]
    doc["meta"]["command"] = " ; ".join(d["meta"]["command"] for d in docs)
    # one entry per stream (the first file's wins), in the order of STREAMS / LABEL_DATASETS
    online = {s["stream"]: s for d in reversed(docs) for s in d.get("online", [])}
    labels = {s["dataset"]: s for d in reversed(docs) for s in d.get("labels", [])}
    doc["online"] = [online[name] for name in STREAMS if name in online]
    doc["labels"] = [labels[name] for name in LABEL_DATASETS if name in labels]
    out.mkdir(parents=True, exist_ok=True)
    _write(doc, out, stem, plots=True)
    print(f"wrote {out / stem}.{{md,json}} and the plots", file=sys.stderr)
    return 0


def _write(doc: dict[str, Any], out: Path, stem: str, *, plots: bool = False) -> None:
    doc = jsonable(doc)
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / f"{stem}.md").write_text(markdown(doc) + "\n")
    if plots and doc["online"]:
        plot_online(doc["online"], out / f"{stem}_online.png")
    if plots and doc["labels"]:
        plot_labels(doc["labels"], out / f"{stem}_labels.png")


if __name__ == "__main__":
    sys.exit(main())
