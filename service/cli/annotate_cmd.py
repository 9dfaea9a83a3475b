"""``omtl annotate --model M --from DATASET``: a simulated oracle answering label requests.

It subscribes to the model's label requests (``GET /queries``, server-sent
events), looks up each request's ``ref`` (a row index written by ``omtl
replay``) in the dataset and answers with the row's true label through
``POST /label``, exactly as a human annotator's tool would.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from evaluation.catalog import load_dataset
from evaluation.dataset import Dataset
from service.cli.client import Api, ApiCallError, HttpApi, sse_messages
from service.cli.replay_cmd import default_url

__all__ = ["AnnotateStats", "annotate", "register", "run"]


@dataclass
class AnnotateStats:
    """How the label requests were answered."""

    requests: int = 0
    accepted: int = 0
    duplicate: int = 0
    conflict: int = 0
    expired: int = 0
    skipped: int = 0


def _row(ref: Any, n: int) -> int | None:
    try:
        row = int(ref)
    except (TypeError, ValueError):
        return None
    return row if 0 <= row < n else None


def annotate(
    api: Api,
    ds: Dataset,
    model: str,
    *,
    after: str = "$",
    limit: int | None = None,
    timeout: float | None = None,
    annotator: str = "oracle",
    flip: float = 0.0,
    seed: int = 0,
) -> AnnotateStats:
    """Answer label requests until ``limit`` requests or ``timeout`` seconds have passed.

    ``flip`` is the probability of answering the wrong class (a noisy annotator;
    classification datasets only).
    """
    rng = np.random.default_rng(seed)
    stats = AnnotateStats()
    params = {"model": model, "after": after, "limit": limit, "timeout": timeout}
    for message in sse_messages(api.sse("/queries", params)):
        request = orjson.loads(message["data"])
        stats.requests += 1
        row = _row(request.get("ref"), ds.n)
        if row is None:
            stats.skipped += 1
            continue
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
    return stats


def register(sub: Any) -> None:
    """Add the ``annotate`` subcommand."""
    p = sub.add_parser("annotate", help="answer label requests from a dataset's ground truth")
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``omtl annotate``."""
    ds = load_dataset(args.dataset)
    api = HttpApi(args.url or default_url())
    try:
        stats = annotate(
            api,
            ds,
            args.model,
            after="0-0" if args.from_start else "$",
            limit=args.limit,
            timeout=args.timeout,
            annotator=args.annotator,
            flip=args.flip,
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
        f"{stats.skipped} without a dataset row"
    )
    return 0
