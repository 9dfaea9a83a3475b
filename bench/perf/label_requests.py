"""What writing label requests costs the worker: one ``XADD`` each or one script call.

``python -m bench.perf.label_requests`` starts an embedded server and writes the same
label requests (the six fields the worker emits) both ways, in one pipeline per
``--batch`` requests, as the worker's flush does after each read
(:func:`service.worker.reading.flush`):

* **XADD**: one pipelined ``XADD ... MAXLEN ~`` per request (redis-py builds and
  parses each command);
* **script**: :func:`service.worker.reading.queue_requests`, the worker's own code
  (:data:`service.store.scripts.WRITE_REQUESTS`, up to
  :data:`service.worker.reading.REQUESTS_PER_CALL` requests per call).

It prints the client's CPU time and the wall time per request (the server's share is
the difference, on the same host), the median of ``--reps`` alternating rounds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from service.embedded_redis import EmbeddedRedis
from service.worker.reading import queue_requests

__all__ = ["main", "requests"]

KEY = "omtl:{bench}:queries"
MAXLEN = 100_000


def requests(n: int) -> list[dict[str, str]]:
    """``n`` label requests as the worker emits them (rows of one batch entry)."""
    return [
        {
            "event": f"1764680000000-0/{i}",
            "task": f"t{i % 100}",
            "score": repr(0.1234567891234 * (i - n / 2)),
            "p": repr(1.0 / (1.0 + i % 7)),
            "ref": "",
            "ts": "1764680000123",
        }
        for i in range(n)
    ]


def _xadd(r: redis.Redis, batch: list[dict[str, str]]) -> None:
    with r.pipeline(transaction=False) as p:
        for fields in batch:
            p.xadd(KEY, fields, maxlen=MAXLEN, approximate=True)  # type: ignore[arg-type]
        p.execute()


def _script(r: redis.Redis, batch: list[dict[str, str]]) -> None:
    with r.pipeline(transaction=False) as p:
        queue_requests(p, KEY, batch, MAXLEN)
        p.execute()


def _round(
    r: redis.Redis, write: Any, reqs: list[dict[str, str]], batch: int
) -> tuple[float, float]:
    """Client CPU and wall microseconds per request of writing ``reqs``."""
    cpu, wall = time.process_time(), time.perf_counter()
    for start in range(0, len(reqs), batch):
        write(r, reqs[start : start + batch])
    n = len(reqs)
    return 1e6 * (time.process_time() - cpu) / n, 1e6 * (time.perf_counter() - wall) / n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=5_000, help="requests per flush")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    reqs = requests(args.requests)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp)) as server:
        r = redis.Redis.from_url(server.url)
        figures: dict[str, list[tuple[float, float]]] = {"XADD": [], "script": []}
        for _ in range(args.reps + 1):  # the first round warms up and is not kept
            for name, write in (("XADD", _xadd), ("script", _script)):
                figures[name].append(_round(r, write, reqs, args.batch))
        assert r.xlen(KEY) > 0
        r.close()
    print(f"{args.requests:,} label requests, {args.batch:,} per flush (median of {args.reps}):")
    for name, rounds in figures.items():
        cpu = statistics.median(c for c, _ in rounds[1:])
        wall = statistics.median(w for _, w in rounds[1:])
        print(f"  {name:<7} client CPU {cpu:6.2f} us per request   wall {wall:6.2f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
