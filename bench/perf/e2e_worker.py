"""Worker drain throughput beside the raw Redis Streams baseline (part of ``bench/perf/e2e.py``).

Both sides drain the same pre-filled stream on the same server:

* **worker**: the real :class:`service.worker.Worker` in burst mode
  (``run(until_idle=True)``): read, decode, predict, count, learn, snapshot;
* **raw**: ``XREADGROUP COUNT read_count`` + ``XACK`` of every read, nothing
  decoded and nothing learned: the transport alone.

Events follow the perf-anchor stream of :mod:`bench.perf.throughput_streams`: x ~ N(0, I)
scaled to unit norm (sent as float32), tasks uniform over K, y = sign(w_k x) with 5% of labels flipped,
w_k = w0 + 0.5 u_k. Every event is labelled, so the worker predicts and learns
each one (with the multitask Perceptron ``cmtl`` unless another learner is named).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis

from bench.perf import throughput_streams
from bench.perf.throughput_streams import BenchStream
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_batch, encode_event
from service.store.models import ModelConfig, put_model
from service.worker import Worker

__all__ = ["DrainResult", "make_stream", "measure_drain"]


@dataclass
class DrainResult:
    """Events per second of the worker and of the raw baseline on the same entries."""

    events: int
    entries: int
    fill_per_sec: float
    worker_per_sec: float
    raw_per_sec: float
    #: CPU time of the worker process per event (steadier than the rate on a busy machine)
    worker_cpu_us: float = 0.0
    #: CPU time of the raw client per event (the Redis server's CPU is in neither figure)
    raw_cpu_us: float = 0.0

    @property
    def ratio(self) -> float:
        """Worker / raw."""
        return self.worker_per_sec / self.raw_per_sec


def make_stream(n: int, n_tasks: int, dim: int, seed: int = 0) -> BenchStream:
    """The perf-anchor stream (the dense stream of the throughput benchmark)."""
    return throughput_streams.make_stream(n_tasks, dim, n, seed=seed)


def _entries(
    stream: BenchStream, per_entry: int, labelled: bool = True
) -> list[dict[str, bytes | str]]:
    """The stream as entries of ``per_entry`` events, with their labels or without."""
    names = [f"t{k}" for k in stream.task]
    if per_entry == 1:
        return [
            encode_event(
                names[i], stream.X[i], float(stream.y[i]) if labelled else None, binary=True
            )
            for i in range(stream.n)
        ]
    return [
        encode_batch(
            names[s : s + per_entry],
            stream.X[s : s + per_entry],
            stream.y[s : s + per_entry] if labelled else None,
        )
        for s in range(0, stream.n, per_entry)
    ]


def _fill(r: redis.Redis, key: str, entries: list[dict[str, bytes | str]]) -> float:
    """XADD every entry (pipelined by 500); returns the seconds taken."""
    started = time.perf_counter()
    for s in range(0, len(entries), 500):
        with r.pipeline(transaction=False) as p:
            for fields in entries[s : s + 500]:
                p.xadd(key, fields)  # type: ignore[arg-type]
            p.execute()
    return time.perf_counter() - started


def _raw_drain(r: redis.Redis, key: str, count: int, total: int) -> float:
    """XREADGROUP + XACK until ``total`` entries are read; returns the seconds taken."""
    r.xgroup_create(key, "bench", id="0")
    seen = 0
    started = time.perf_counter()
    while seen < total:
        reply = r.xreadgroup("bench", "raw", {key: ">"}, count=count)
        ids = [eid for eid, _ in reply[0][1]]
        r.xack(key, "bench", *ids)
        seen += len(ids)
    return time.perf_counter() - started


def measure_drain(
    settings: Settings,
    stream: BenchStream,
    per_entry: int,
    model: str,
    dim: int,
    learner: str = "cmtl",
    labelled: bool = True,
) -> DrainResult:
    """Fill the model's log (a new model of ``learner``) and a baseline stream with the
    same entries and drain both. ``labelled=False``: the events come without their labels
    (each one scored, a query decision drawn, a label request written where the learner
    asks)."""
    r = redis.Redis.from_url(settings.redis_url or "")
    tasks = [f"t{k}" for k in range(stream.n_tasks)]
    put_model(r, model, ModelConfig(learner=learner, n_features=dim, tasks=tasks))
    entries = _entries(stream, per_entry, labelled)
    fill = _fill(r, keys.log_key(model), entries)
    worker = Worker(settings, models=[model])
    try:
        result = worker.run(until_idle=True)
    finally:
        worker.close()
    if result.events != stream.n:
        raise RuntimeError(f"the worker applied {result.events} of {stream.n} events")
    worker_rate = result.events / result.seconds
    raw_key = f"bench:{{{model}}}:raw"
    r.delete(raw_key)
    _fill(r, raw_key, entries)
    raw_cpu = time.process_time()
    raw_seconds = _raw_drain(r, raw_key, settings.read_count, len(entries))
    raw_cpu = time.process_time() - raw_cpu
    r.delete(raw_key)
    r.close()
    return DrainResult(
        events=stream.n,
        entries=len(entries),
        fill_per_sec=stream.n / fill,
        worker_per_sec=worker_rate,
        raw_per_sec=stream.n / raw_seconds,
        worker_cpu_us=1e6 * result.cpu_seconds / stream.n,
        raw_cpu_us=1e6 * raw_cpu / stream.n,
    )
