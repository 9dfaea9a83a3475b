"""``omtl replay DATASET --model M [--rate R]``: stream a dataset into a running service.

Rows are sent in order (or shuffled with ``--shuffle SEED``) through
``POST /events`` in batches, each event carrying ``ref`` = its row index so
that ``omtl annotate`` can answer label requests from the dataset's ground
truth. By default the events are unlabelled, so labels come only from
annotators; ``--labelled P`` sends a fraction P of them with their label.

A multiview dataset (``multiview-shared``, ``multiview-tasks``,
``landmine-views``) is sent as multiview rounds, ``{"views": {task: x, ...},
"task": ...}`` (docs/architecture.md, "Log entry format"), to a model of a
multiview learner; ``--create`` gives it the dataset's task names and, for a
learner with ``task_dims``, their dimensions (a learner without it, such as
``matrix-pnorm``, gets views zero-padded to the largest dimension).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from evaluation.catalog import load_any
from evaluation.dataset import Dataset
from evaluation.multiview import MultiviewDataset
from service.cli.client import Api, ApiCallError, HttpApi
from service.cli.progress import Progress, progress
from service.settings import get_settings

__all__ = [
    "COMMANDS",
    "ReplayStats",
    "ensure_model",
    "ensure_multiview_model",
    "event_json",
    "register",
    "replay",
    "round_json",
    "run",
]


@dataclass
class ReplayStats:
    """What a replay sent."""

    events: int = 0
    labelled: int = 0
    requests: int = 0
    seconds: float = 0.0


def default_url() -> str:
    """The API's URL from the settings (``OMTL_API_HOST`` / ``OMTL_API_PORT``)."""
    s = get_settings()
    host = "127.0.0.1" if s.api_host in ("0.0.0.0", "::") else s.api_host
    return f"http://{host}:{s.api_port}"


def event_json(ds: Dataset, row: int, labelled: bool) -> dict[str, Any]:
    """The ``/events`` item of dataset row ``row`` (sparse rows as {indices, values})."""
    if sp.issparse(ds.X):
        csr = sp.csr_matrix(ds.X)
        start, end = csr.indptr[row], csr.indptr[row + 1]
        x: Any = {
            "indices": csr.indices[start:end].tolist(),
            "values": csr.data[start:end].tolist(),
        }
    else:
        x = np.asarray(ds.X[row], dtype=np.float64).tolist()
    event: dict[str, Any] = {"task": ds.task_names[int(ds.task[row])], "x": x, "ref": str(row)}
    if labelled:
        event["y"] = float(ds.y[row])
    return event


def round_json(ds: MultiviewDataset, row: int, labelled: bool) -> dict[str, Any]:
    """The ``/events`` item of round ``row`` of a multiview dataset: every view, dense."""
    views = {name: v[row].tolist() for name, v in zip(ds.view_names, ds.views, strict=True)}
    event: dict[str, Any] = {
        "task": ds.view_names[int(ds.task[row])],
        "views": views,
        "ref": str(row),
    }
    if labelled:
        event["y"] = float(ds.y[row])
    return event


def for_learner(ds: MultiviewDataset, learner: str) -> MultiviewDataset:
    """The rounds as ``learner`` takes them: zero-padded to the largest view dimension
    when it has no ``task_dims`` and the views differ in dimension. Imports the learners
    here: ``omtl annotate`` and ``omtl replay`` of single-view data do without numba."""
    import learners

    has_dims = any(p.name == "task_dims" for p in learners.get(learner).params)
    return ds if has_dims or ds.uniform else ds.padded()


def ensure_multiview_model(
    api: Api, model: str, ds: MultiviewDataset, learner: str | None, params: dict[str, Any]
) -> MultiviewDataset:
    """Create ``model`` for the multiview dataset unless it exists (``learner`` None: it must
    exist); returns the rounds to send. Refuse a model whose tasks or dimensions differ."""
    status, info = api.request("GET", f"/models/{model}")
    if status == 200:
        if info.get("task_dims") is None:
            raise ApiCallError(
                409, f"model {model!r} runs {info['learner']!r}, which takes no multiview rounds"
            )
        data = for_learner(ds, info["learner"])
        want = dict(zip(data.view_names, data.view_dims, strict=True))
        if info["task_dims"] != want:
            raise ApiCallError(
                409, f"model {model!r} has task dimensions {info['task_dims']}, the data {want}"
            )
        return data
    if learner is None:
        raise ApiCallError(status, info)
    data = for_learner(ds, learner)
    spec_params = dict(params)
    if data is ds and not ds.uniform:
        spec_params["task_dims"] = ds.view_dims
    spec = {
        "learner": learner,
        "params": spec_params,
        "n_features": max(data.view_dims),
        "tasks": list(data.view_names),
    }
    status, info = api.request("PUT", f"/models/{model}", spec)
    if status not in (200, 201):
        raise ApiCallError(status, info)
    return data


def ensure_model(api: Api, model: str, ds: Dataset, learner: str, params: dict[str, Any]) -> None:
    """Create ``model`` for the dataset unless it exists; refuse a model of another dimension."""
    status, info = api.request("GET", f"/models/{model}")
    if status == 200:
        if info["n_features"] != ds.n_features:
            raise ApiCallError(
                409,
                f"model {model!r} has n_features={info['n_features']}, "
                f"the dataset has {ds.n_features}",
            )
        return
    spec = {"learner": learner, "params": params, "n_features": ds.n_features}
    spec["tasks"] = list(ds.task_names)
    status, info = api.request("PUT", f"/models/{model}", spec)
    if status not in (200, 201):
        raise ApiCallError(status, info)


def replay(
    api: Api,
    ds: Dataset | MultiviewDataset,
    model: str,
    *,
    rate: float | None = None,
    batch: int = 100,
    labelled: float = 0.0,
    limit: int | None = None,
    shuffle: int | None = None,
    bar: Progress | None = None,
) -> ReplayStats:
    """Send the dataset's rows as events (a multiview set's rounds as multiview rounds);
    ``rate`` caps events per second; ``bar`` (a :func:`service.cli.progress.progress` bar)
    counts the events sent."""
    order = np.arange(ds.n)
    if shuffle is not None:
        order = np.random.default_rng(shuffle).permutation(ds.n)
    if limit is not None:
        order = order[:limit]
    with_label = (
        np.random.default_rng(0 if shuffle is None else shuffle + 1).random(ds.n) < labelled
    )
    stats = ReplayStats()
    started = time.monotonic()
    for start in range(0, order.shape[0], batch):
        rows = order[start : start + batch].tolist()
        if isinstance(ds, MultiviewDataset):
            events = [round_json(ds, r, bool(with_label[r])) for r in rows]
        else:
            events = [event_json(ds, r, bool(with_label[r])) for r in rows]
        status, body = api.request("POST", "/events", {"model": model, "events": events})
        if status != 202:
            raise ApiCallError(status, body)
        stats.events += len(rows)
        stats.labelled += int(with_label[rows].sum())
        stats.requests += 1
        if bar is not None:
            bar.update(len(rows))
        if rate:
            ahead = stats.events / rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
    stats.seconds = time.monotonic() - started
    return stats


#: The subcommands :func:`register` adds and their one-line help (read from this source by
#: :mod:`service.cli`, which imports only the module of the command run).
COMMANDS = {
    "replay": "stream a dataset into a running service",
}


def register(sub: Any) -> None:
    """Add the ``replay`` subcommand."""
    p = sub.add_parser("replay", help=COMMANDS["replay"])
    p.add_argument(
        "dataset",
        help="dataset name (see `omtl datasets`; a multiview one is sent as rounds) or a .npz path",
    )
    p.add_argument("--model", required=True, help="model to send the events to")
    p.add_argument("--rate", type=float, default=None, help="events per second (default: max)")
    p.add_argument("--batch", type=int, default=100, help="events per request (default 100)")
    p.add_argument("--labelled", type=float, default=0.0, help="fraction sent with labels")
    p.add_argument("--limit", type=int, default=None, help="send at most this many rows")
    p.add_argument("--shuffle", type=int, default=None, metavar="SEED", help="shuffle rows")
    p.add_argument("--url", default=None, help="API URL (default from OMTL_API_HOST/PORT)")
    p.add_argument("--create", metavar="LEARNER", default=None, help="create the model if absent")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``omtl replay``."""
    if args.batch < 1 or not 0.0 <= args.labelled <= 1.0:
        print("--batch must be >= 1 and --labelled in [0, 1]", file=sys.stderr)
        return 2
    ds = load_any(args.dataset)
    api = HttpApi(args.url or default_url())
    try:
        if isinstance(ds, MultiviewDataset):
            ds = ensure_multiview_model(api, args.model, ds, args.create, {})
        elif args.create:
            ensure_model(api, args.model, ds, args.create, {})
        total = ds.n if args.limit is None else min(ds.n, args.limit)
        with progress(total, f"replay {ds.name}", "event") as bar:
            stats = replay(
                api,
                ds,
                args.model,
                rate=args.rate,
                batch=args.batch,
                labelled=args.labelled,
                limit=args.limit,
                shuffle=args.shuffle,
                bar=bar,
            )
    except (ApiCallError, OSError) as exc:
        print(f"omtl replay: {exc}", file=sys.stderr)
        return 1
    finally:
        api.close()
    rate = stats.events / stats.seconds if stats.seconds > 0 else float("inf")
    print(
        f"sent {stats.events} events ({stats.labelled} labelled) of {ds.name} to model "
        f"{args.model!r} in {stats.requests} requests, {stats.seconds:.1f} s ({rate:,.0f} events/s)"
    )
    return 0
