"""``omtl annotate --model M --from DATASET``: a simulated oracle answering label requests.

It subscribes to the model's label requests (``GET /queries``, server-sent
events), looks up each request's ``ref`` (a row index written by ``omtl
replay``) in the dataset and answers with the row's true label through
``POST /label``, exactly as a human annotator's tool would.

It runs until ``--limit`` requests or ``--timeout`` seconds (forever without
either). A dropped stream is reopened from the last id seen (the stream's own
opening ``id:`` line counts), so nothing is missed or answered twice; it gives
up, exiting non-zero, only when it cannot reconnect for ``--reconnect-for``
seconds or the service answers with an error.
"""

from __future__ import annotations

import argparse
import http.client
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from evaluation.catalog import load_any
from evaluation.dataset import Dataset
from evaluation.multiview import MultiviewDataset
from service.cli.client import Api, ApiCallError, HttpApi, sse_messages
from service.cli.progress import Progress, progress
from service.cli.replay_cmd import default_url

__all__ = ["AnnotateStats", "COMMANDS", "annotate", "register", "run"]


@dataclass
class AnnotateStats:
    """How the label requests were answered."""

    requests: int = 0
    accepted: int = 0
    duplicate: int = 0
    conflict: int = 0
    expired: int = 0
    skipped: int = 0
    reconnects: int = 0


def _row(ref: Any, n: int) -> int | None:
    try:
        row = int(ref)
    except (TypeError, ValueError):
        return None
    return row if 0 <= row < n else None


class _Position:
    """The last SSE ``id:`` seen on a stream (a message's, or the stream's opening one)."""

    def __init__(self, start: str) -> None:
        self.id = start

    def track(self, lines: Iterable[str]) -> Iterator[str]:
        for line in lines:
            if line.startswith("id:"):
                self.id = line[3:].strip()
            yield line


#: Errors of a dropped or refused stream connection (reconnected).
_DROPS = (OSError, http.client.HTTPException)


def annotate(
    api: Api,
    ds: Dataset | MultiviewDataset,
    model: str,
    *,
    after: str = "$",
    limit: int | None = None,
    timeout: float | None = None,
    annotator: str = "oracle",
    flip: float = 0.0,
    seed: int = 0,
    reconnect_for: float = 60.0,
    bar: Progress | None = None,
) -> AnnotateStats:
    """Answer label requests until ``limit`` requests or ``timeout`` seconds have passed
    (forever without either), reconnecting after a dropped stream.

    ``flip`` is the probability of answering the wrong class (a noisy annotator;
    classification datasets only). Raises :class:`ApiCallError` for an error
    answer and ``OSError`` once reconnecting has failed for ``reconnect_for`` s.
    ``bar`` counts the requests answered.
    """
    rng = np.random.default_rng(seed)
    stats = AnnotateStats()
    deadline = None if timeout is None else time.monotonic() + timeout
    position = _Position(after)
    failing_since: float | None = None
    while limit is None or stats.requests < limit:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            break
        left = None if limit is None else limit - stats.requests
        params = {"model": model, "after": position.id, "limit": left, "timeout": remaining}
        try:
            for message in sse_messages(position.track(api.sse("/queries", params))):
                failing_since = None
                _answer(api, ds, model, orjson.loads(message["data"]), stats, annotator, flip, rng)
                if bar is not None:
                    bar.update(1)
            failing_since = None
        except _DROPS:
            now = time.monotonic()
            failing_since = failing_since or now
            if now - failing_since >= reconnect_for:
                raise
            stats.reconnects += 1
            time.sleep(min(1.0, reconnect_for / 10))
    return stats


def _answer(
    api: Api,
    ds: Dataset | MultiviewDataset,
    model: str,
    request: dict[str, Any],
    stats: AnnotateStats,
    annotator: str,
    flip: float,
    rng: np.random.Generator,
) -> None:
    """Answer one label request with the dataset row's label (``flip``: a wrong one)."""
    stats.requests += 1
    row = _row(request.get("ref"), ds.n)
    if row is None:
        stats.skipped += 1
        return
    y = float(ds.y[row])
    if flip and ds.kind == "classification" and rng.random() < flip:
        y = -y
    body = {"model": model, "event_id": request["event_id"], "y": y, "annotator": annotator}
    status, answer = api.request("POST", "/label", body)
    if status == 202:
        if answer["status"] == "accepted":
            stats.accepted += 1
        else:
            stats.duplicate += 1
    elif status == 409:
        stats.conflict += 1
    elif status == 404:
        stats.expired += 1
    else:
        raise ApiCallError(status, answer)


#: The subcommands :func:`register` adds and their one-line help (read from this source by
#: :mod:`service.cli`, which imports only the module of the command run).
COMMANDS = {
    "annotate": "answer label requests from a dataset's ground truth",
}


def register(sub: Any) -> None:
    """Add the ``annotate`` subcommand."""
    p = sub.add_parser("annotate", help=COMMANDS["annotate"])
    p.add_argument("--model", required=True, help="model whose label requests to answer")
    p.add_argument("--from", dest="dataset", required=True, help="dataset with the true labels")
    p.add_argument("--url", default=None, help="API URL (default from OMTL_API_HOST/PORT)")
    p.add_argument("--limit", type=int, default=None, help="stop after this many requests")
    p.add_argument("--timeout", type=float, default=None, help="stop after this many seconds")
    p.add_argument(
        "--from-start", action="store_true", help="also answer requests already in the stream"
    )
    p.add_argument("--annotator", default="oracle", help="name recorded with each label")
    p.add_argument("--flip", type=float, default=0.0, help="probability of a wrong answer")
    p.add_argument(
        "--reconnect-for",
        type=float,
        default=60.0,
        help="give up (exit 1) after failing to reconnect for this many seconds",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``omtl annotate``."""
    ds = load_any(args.dataset)  # a multiview set: rows are rounds, ref = round index
    api = HttpApi(args.url or default_url())
    try:
        with progress(args.limit, f"annotate {args.model}", "label") as bar:
            stats = annotate(
                api,
                ds,
                args.model,
                after="0-0" if args.from_start else "$",
                limit=args.limit,
                timeout=args.timeout,
                annotator=args.annotator,
                flip=args.flip,
                reconnect_for=args.reconnect_for,
                bar=bar,
            )
    except (ApiCallError, OSError) as exc:
        print(f"omtl annotate: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        api.close()
    print(
        f"answered {stats.requests} label requests: {stats.accepted} accepted, "
        f"{stats.duplicate} repeated, {stats.conflict} conflicting, {stats.expired} expired, "
        f"{stats.skipped} without a dataset row, {stats.reconnects} reconnects"
    )
    return 0
