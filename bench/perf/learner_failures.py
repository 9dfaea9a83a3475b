"""What a learner that fails on some entries costs the worker (docs/architecture.md,
"When the learner fails").

A log of labelled single events (binary, eight per millisecond, so that they form
groups) for a ``cmtl`` model, with a share of them carrying a row the learner fails
on half-way through its call (:mod:`bench.faulty_learner`). One worker
applies each log on a throwaway embedded Redis server with the default settings;
every failure rolls the model back to its snapshot and replays, and a failure inside
a group costs two roll-backs (the group, then the entry alone). Prints wall and CPU
seconds per log, the entries dead-lettered, and the milliseconds each failing entry
adds against the log without failures.

Usage: ``python -m bench.perf.learner_failures [--events N] [--shares 0,0.001,0.01]``
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time

import numpy as np
import redis

from bench.faulty_learner import MAGIC, make_faulty
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event
from service.store.models import ModelConfig, put_model
from service.worker import Worker

D = 100


def write_log(r: redis.Redis, name: str, n: int, share: float, seed: int) -> int:
    """``n`` labelled events, a ``share`` of them faulty; returns how many are."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)).astype(np.float32)
    faulty = rng.random(n) < share
    X[faulty, 0] = MAGIC
    for start in range(0, n, 10_000):
        with r.pipeline(transaction=False) as p:
            for i in range(start, min(n, start + 10_000)):
                y = 1 if X[i, 1] > 0 else -1
                fields = encode_event("ab"[i % 2], X[i], y=y, binary=True)
                p.xadd(keys.log_key(name), fields, id=f"{1 + i // 8}-{i % 8}")  # type: ignore[arg-type]
            p.execute()
    return int(faulty.sum())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--shares", default="0,0.001,0.01")
    args = parser.parse_args(argv)
    shares = [float(s) for s in args.shares.split(",")]
    logging.disable(logging.ERROR)  # one log line per failure otherwise
    make_faulty("cmtl")
    print(f"cmtl, K = 2, d = {D}, {args.events:,} labelled events\n")
    print("| faulty share | faulty entries | wall s | CPU s | dead letters | ms per faulty entry |")
    print("|---:|---:|---:|---:|---:|---:|")
    base: float | None = None
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(tmp, appendfsync="everysec") as server:
        r = redis.Redis.from_url(server.url)
        for k, share in enumerate(shares):
            name = f"m{k}"
            put_model(r, name, ModelConfig(learner="cmtl", n_features=D, tasks=["a", "b"]))
            n_faulty = write_log(r, name, args.events, share, seed=k)
            settings = Settings(redis_url=server.url, data_dir=tmp, worker_metrics_port=0)
            wall, cpu = time.perf_counter(), time.process_time()
            Worker(settings, models=[name]).run(until_idle=True, timeout=3600)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if base is None and n_faulty == 0:
                base = wall
            per = "-" if base is None or n_faulty == 0 else f"{1e3 * (wall - base) / n_faulty:.1f}"
            dead = r.xlen(keys.dead_key(name))
            print(f"| {share:g} | {n_faulty:,} | {wall:.2f} | {cpu:.2f} | {dead:,} | {per} |")


if __name__ == "__main__":
    main()
