"""The seven streams of the quality benchmark and their event orders.

Synthetic streams come from :func:`bench.perf.throughput_streams.make_stream`
(K = 10 d = 100 is the perf-anchor stream, same seed ``7 K + d`` as the throughput
benchmark); the real sets from :func:`evaluation.catalog.load_dataset` (all rows,
no split: the online protocol streams every row). Every system sees the same
orders: shuffle ``r`` of a stream is ``run_rng(seed, r).permutation(n)`` (the
``online`` protocol's), and tuning uses one more shuffle from another seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bench.perf.throughput_streams import make_stream
from evaluation.catalog import load_dataset
from evaluation.common import run_rng
from evaluation.dataset import Dataset

__all__ = ["STREAMS", "StreamSpec", "event_orders", "tuning_order"]

#: Offset of the seed of the tuning shuffle (never equal to an evaluation seed).
TUNING_SEED_OFFSET = 1_000_003


@dataclass(frozen=True)
class StreamSpec:
    """A stream by name, with its loader (``quick`` loads a smaller version)."""

    name: str
    load: Callable[[bool], Dataset]


def _synthetic(K: int, d: int, n: int) -> Callable[[bool], Dataset]:
    def load(quick: bool) -> Dataset:
        s = make_stream(K, d, n // 10 if quick else n, seed=K * 7 + d)
        return Dataset(
            name=f"synthetic K={K} d={d}",
            X=s.X,
            y=s.y,
            task=s.task.astype(np.int64),
            task_names=[f"task{k}" for k in range(K)],
            description=f"bench/perf/throughput_streams.py, {s.n} events, seed {K * 7 + d}",
        )

    return load


def _real(spec: str) -> Callable[[bool], Dataset]:
    return lambda quick: load_dataset(spec)


#: Events of the synthetic streams (a tenth with ``--quick``).
SYNTHETIC_EVENTS = 20_000

STREAMS: dict[str, StreamSpec] = {
    s.name: s
    for s in (
        StreamSpec("synthetic-K10-d100", _synthetic(10, 100, SYNTHETIC_EVENTS)),
        StreamSpec("synthetic-K10-d1000", _synthetic(10, 1000, SYNTHETIC_EVENTS)),
        StreamSpec("synthetic-K100-d100", _synthetic(100, 100, SYNTHETIC_EVENTS)),
        StreamSpec("landmine", _real("landmine")),
        StreamSpec("spam15", _real("spam15")),
        StreamSpec("sentiment4", _real("sentiment4")),
        StreamSpec("tdt2", _real("tdt2")),
    )
}


def event_orders(n: int, runs: int, seed: int) -> list[np.ndarray]:
    """The ``runs`` evaluation shuffles of ``n`` events (the ``online`` protocol's)."""
    return [run_rng(seed, r).permutation(n) for r in range(runs)]


def tuning_order(n: int, seed: int) -> np.ndarray:
    """The separate shuffle every system is tuned on."""
    return run_rng(seed + TUNING_SEED_OFFSET, 0).permutation(n)
