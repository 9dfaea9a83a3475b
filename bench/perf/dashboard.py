"""How long the dashboard's data and the annotator's pending list take at many tasks
(run by command, not in CI).

Creates a model of K tasks (default 5,000; ``--learner``, default ``amlc``, whose
relation matrix is K x K)
on an embedded server, fills its history stream with 600 entries touching a few tasks
each and its label-request stream with 5,000 requests (half answered), then times
``GET /dashboard/data/{m}`` (first call, and later calls of the same snapshot version,
whose heatmap is cached), ``GET /models/{m}/history`` and
``GET /models/{m}/queries/pending`` through the real ASGI app. Prints the figures in
milliseconds (median of the repeats).

Usage: ``python -m bench.perf.dashboard [--tasks K] [--reps R] [--learner NAME]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event


def _fill(r: redis.Redis, model: str, tasks: list[str], n_history: int, n_requests: int) -> None:
    rng = np.random.default_rng(0)
    labels = np.zeros(len(tasks), dtype=np.int64)
    mistakes = np.zeros(len(tasks), dtype=np.int64)
    with r.pipeline(transaction=False) as p:
        for i in range(n_history):
            touched = rng.choice(len(tasks), size=20, replace=False)
            labels[touched] += 5
            mistakes[touched] += rng.integers(0, 3, size=20)
            entry = {
                "names": [tasks[t] for t in touched],
                "labels": labels[touched].tolist(),
                "mistakes": mistakes[touched].tolist(),
            }
            p.xadd(
                keys.history_key(model),
                {
                    "ts": str(time.time()),
                    "version": "0",
                    "generation": r.hget(keys.config_key(model), "generation") or b"0",
                    "k": str(len(tasks)),
                    "totals": json.dumps({"labels": int(labels.sum())}),
                    "tasks": json.dumps(entry),
                },
            )
            if i % 100 == 99:
                p.execute()
        p.execute()
    with r.pipeline(transaction=False) as p:
        for i in range(n_requests):
            fields = encode_event(tasks[i % len(tasks)], [0.0, 1.0], None, f"row-{i}", binary=True)
            event = r.xadd(keys.log_key(model), fields).decode()  # type: ignore[arg-type]
            p.xadd(keys.queries_key(model), {"event": event, "task": tasks[0], "score": "0.1"})
            if i % 2 == 0:
                p.hset(keys.labels_key(model), event, "1")
        p.execute()


def _time(client: TestClient, path: str, reps: int) -> tuple[float, float]:
    """(first call, median of the next ``reps``) in milliseconds."""
    times = []
    for _ in range(reps + 1):
        start = time.perf_counter()
        answer = client.get(path)
        times.append((time.perf_counter() - start) * 1000)
        answer.raise_for_status()
    return times[0], statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--learner", default="amlc", help="amlc keeps a K x K matrix")
    args = parser.parse_args()
    tasks = [f"task-{i:05d}" for i in range(args.tasks)]
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp)) as server:
        settings = Settings(
            redis_url=server.url,
            default_model="",
            max_tasks=args.tasks,
            max_model_bytes=2**31,
            data_dir=Path(tmp),
        )
        with TestClient(create_app(settings)) as client:
            body = {"learner": args.learner, "n_features": 2, "tasks": tasks}
            client.put("/models/big", json=body).raise_for_status()
            r = redis.Redis.from_url(server.url)
            _fill(r, "big", tasks, 600, 5000)
            print(
                f"{args.learner}, K = {args.tasks} tasks, 600 history entries, "
                "5,000 label requests (half answered)"
            )
            for label, path in (
                ("GET /dashboard/data/big", "/dashboard/data/big"),
                ("GET /models/big/history", "/models/big/history?limit=600"),
                ("GET /models/big/queries/pending", "/models/big/queries/pending?limit=100"),
            ):
                first, later = _time(client, path, args.reps)
                print(f"{label:36s} first {first:8.1f} ms   then {later:8.1f} ms (median)")
            r.close()


if __name__ == "__main__":
    main()
