"""``omtl evaluate``, ``omtl compare`` and ``omtl datasets``: offline evaluation of learners.

``omtl evaluate DATASET --learner NAME [--param key=value ...] [--protocol online|split]
[--runs R] [--seed S] [--budget N] [--json FILE]`` prints a table (and writes the
protocol's JSON document); ``omtl compare DATASET --learners a,b,c ...`` runs
several learners on the same shuffles and prints one table (``--json`` writes
the list of documents, ``--plot FILE.png`` draws their curves).

DATASET is a built-in name with optional parameters (``synthetic-rom:delta2=1``)
or a path to a ``.npz`` file (format: :mod:`evaluation.npzformat`). The
multiview sets (``multiview-shared``, ``multiview-tasks``, ``landmine-views``)
go with ``--protocol multiview`` (their default) and the multiview learners (``mmperc``,
``matrix-pnorm``, ``multiview-independent``, ``multiview-concat``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evaluation import protocols
from evaluation.catalog import (
    MULTIVIEW_PROTOCOL,
    dataset_names,
    dataset_summary,
    is_multiview,
    load_for_protocol,
    multiview_dataset_names,
)
from evaluation.compare import compare, plot_curves
from evaluation.datapath import DataNotFoundError
from evaluation.progress import ProgressBar
from evaluation.report import format_comparison, format_document


def parse_value(text: str) -> Any:
    """A parameter value: JSON when it parses (numbers, booleans, null, lists), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_params(items: list[str] | None) -> dict[str, Any]:
    """``["b=0", "graph=[[0,1],[1,0]]"]`` -> ``{"b": 0, "graph": [[0, 1], [1, 0]]}``."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--param {item!r} is not key=value")
        out[key.strip()] = parse_value(value.strip())
    return out


def _common_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "dataset",
        help=f"built-in dataset ({', '.join(dataset_names())}), optionally NAME:key=value,..., "
        "or a path to a .npz file; with --protocol multiview a multiview dataset "
        f"({', '.join(multiview_dataset_names())})",
    )
    p.add_argument(
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="learner hyperparameter (repeatable; values are JSON when they parse)",
    )
    p.add_argument(
        "--protocol",
        default=None,
        help=f"evaluation protocol: {', '.join(sorted(protocols.available()))} "
        "(default split; multiview for a multiview dataset)",
    )
    p.add_argument("--runs", type=int, default=10, help="number of runs (default 10)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the shuffles and splits (default 0)"
    )
    p.add_argument("--budget", type=int, default=None, help="stop consuming labels after N")
    p.add_argument("--json", metavar="FILE", help="also write the JSON output to FILE")


#: The subcommands :func:`register` adds and their one-line help (read from this source by
#: :mod:`service.cli`, which imports only the module of the command run).
COMMANDS = {
    "evaluate": "evaluate one learner on a dataset",
    "compare": "compare learners on the same shuffles of a dataset",
    "datasets": "list the built-in evaluation datasets",
}


def register(sub: Any) -> None:
    """Add the ``evaluate`` and ``compare`` subcommands."""
    ev = sub.add_parser("evaluate", help=COMMANDS["evaluate"])
    _common_options(ev)
    ev.add_argument("--learner", required=True, help="registered learner name (see omtl learners)")
    ev.set_defaults(func=run_evaluate)
    cmp = sub.add_parser("compare", help=COMMANDS["compare"])
    _common_options(cmp)
    cmp.add_argument("--learners", required=True, help="comma-separated learner names")
    cmp.add_argument(
        "--plot", metavar="FILE.png", help="draw the learners' curves (needs matplotlib)"
    )
    cmp.set_defaults(func=run_compare)
    ds = sub.add_parser("datasets", help=COMMANDS["datasets"])
    ds.set_defaults(func=run_datasets)


def run_datasets(args: argparse.Namespace) -> int:
    """Run ``omtl datasets``: one line per built-in dataset."""
    names = dataset_names()
    multiview = multiview_dataset_names()
    width = max(len(n) for n in names + multiview)
    for name in names:
        print(f"{name:<{width}}  {dataset_summary(name)}")
    print("\nMultiview (rounds of K views; --protocol multiview):")
    for name in multiview:
        print(f"{name:<{width}}  {dataset_summary(name)}")
    print("\nParameters after a colon (NAME:key=value,...); or a .npz file (see the docs).")
    return 0


def _check(args: argparse.Namespace) -> None:
    """Refuse bad option values; fill in the default protocol for the dataset."""
    if args.protocol is None:
        args.protocol = MULTIVIEW_PROTOCOL if is_multiview(args.dataset) else "split"
    if args.runs < 1:
        raise ValueError("--runs must be at least 1")
    if args.seed < 0:
        raise ValueError("--seed must be >= 0")
    if args.budget is not None and args.budget < 0:
        raise ValueError("--budget must be >= 0")


def _write_json(path: str, payload: Any) -> None:
    Path(path).write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n")


def run_evaluate(args: argparse.Namespace) -> int:
    """Run ``omtl evaluate``."""
    bar = ProgressBar(f"{args.learner}")
    try:
        _check(args)
        # a Dataset, or a MultiviewDataset for the multiview protocol (the only one taking it)
        dataset: Any = load_for_protocol(args.dataset, args.protocol)
        doc = protocols.get(args.protocol).run(
            dataset,
            args.learner,
            parse_params(args.param),
            runs=args.runs,
            seed=args.seed,
            budget=args.budget,
            progress=bar,
        )
    except (ValueError, DataNotFoundError, FileNotFoundError) as exc:
        bar.close()
        print(f"omtl evaluate: {exc}", file=sys.stderr)
        return 2
    except MemoryError:
        bar.close()
        print(f"omtl evaluate: out of memory: {args.learner} on {args.dataset}", file=sys.stderr)
        return 2
    bar.close()
    print(format_document(doc), end="")
    if args.json:
        _write_json(args.json, doc)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    """Run ``omtl compare``."""
    names = [n.strip() for n in args.learners.split(",") if n.strip()]
    bars: list[ProgressBar] = []

    def progress(name: str) -> ProgressBar:
        if bars:
            bars[-1].close()
        bars.append(ProgressBar(name))
        return bars[-1]

    try:
        _check(args)
        if not names:
            raise ValueError("--learners needs at least one name")
        # a Dataset, or a MultiviewDataset for the multiview protocol (the only one taking it)
        dataset: Any = load_for_protocol(args.dataset, args.protocol)
        docs = compare(
            dataset,
            names,
            parse_params(args.param),
            protocol=args.protocol,
            runs=args.runs,
            seed=args.seed,
            budget=args.budget,
            progress=progress,
        )
        if args.plot:
            plot_curves(docs, args.plot)
    except (ValueError, RuntimeError, DataNotFoundError, FileNotFoundError, MemoryError) as exc:
        if bars:
            bars[-1].close()
        print(f"omtl compare: {exc or type(exc).__name__}", file=sys.stderr)
        return 2
    if bars:
        bars[-1].close()
    print(format_comparison(docs), end="")
    if args.json:
        _write_json(args.json, docs)
    return 0
