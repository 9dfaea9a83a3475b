"""``/models/{m}/relations`` and ``/models/{m}/tasks`` at 5,000 tasks (run by command, not in CI).

For each learner (``cmtl``: a fixed interaction matrix computed on request;
``ella``: a cosine similarity of the task codes; ``rom-pgd``: a cosine
similarity derived from the weights), a model with K tasks (d = 10) gets a
snapshot written straight to an embedded Redis server, and the real ASGI app
(in process, through ``fastapi.testclient``) answers:

* ``/relations?tasks=<50 tasks>&top_k=5``: the first request after the snapshot
  (cold: the matrix is computed) and the median of the next ones (warm);
* ``/relations?top_k=10&matrix=false``: every task's 10 most related tasks;
* ``/tasks?limit=100`` (one page) and ``/tasks`` (all K rows);
* the latency of ``/predict`` requests to another, small model sent while a
  cold ``/relations`` is being computed (it runs in a worker thread, so /predict
  is not held behind it; the snapshot load that precedes it is the model
  cache's, on the event loop, and is part of the figure).

Prints a table and writes ``bench/results/relations.md``. Figures only; nothing
here asserts a time.

Usage: ``python -m bench.perf.relations [--tasks 5000] [--reps 20]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import redis
from fastapi.testclient import TestClient

import learners
from bench import RESULTS
from bench.perf.throughput_report import machine
from service.api.app import create_app
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings
from service.store.models import ModelConfig, ModelLimits, put_model
from service.store.snapshot import Snapshot, write_snapshot

D = 10
LEARNERS = ("cmtl", "ella", "rom-pgd")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def _timed(client: TestClient, url: str) -> tuple[float, int]:
    start = time.perf_counter()
    r = client.get(url)
    elapsed = time.perf_counter() - start
    if r.status_code != 200:
        raise RuntimeError(f"{url}: {r.status_code} {r.text[:200]}")
    return elapsed, len(r.content)


def _warm(client: TestClient, url: str, reps: int) -> float:
    return statistics.median(_timed(client, url)[0] for _ in range(reps))


def _model(r: redis.Redis, name: str, learner_name: str, k: int, limits: ModelLimits) -> None:
    config = put_model(r, name, ModelConfig(learner=learner_name, n_features=D), limits)
    learner = learners.make(learner_name, n_features=D, n_tasks=k, seed=0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4 * k, D))
    tasks = np.arange(4 * k) % k
    y = np.where(X[:, 0] * np.where(tasks % 2 == 0, 1.0, -1.0) > 0, 1.0, -1.0)
    learner.score_and_learn_many(X, y, tasks)
    snap = Snapshot(
        version=0,
        generation=config.generation,
        learner=learner,
        task_names=[f"task-{i}" for i in range(k)],
        last_id="1-0",
    )
    write_snapshot(r, name, snap)


def _predict_during(client: TestClient, url: str, model: str) -> tuple[float, float]:
    """Time of a cold ``url`` and the slowest /predict answered while it ran."""
    done = threading.Event()
    took: list[float] = []

    def cold() -> None:
        took.append(_timed(client, url)[0])
        done.set()

    thread = threading.Thread(target=cold)
    thread.start()
    worst = 0.0
    body = {"model": model, "task": "a", "x": [0.1] * D, "learn": False}
    while not done.is_set():
        start = time.perf_counter()
        assert client.post("/predict", json=body).status_code == 200
        worst = max(worst, time.perf_counter() - start)
    thread.join()
    return took[0], worst


def run(k: int, reps: int) -> list[dict[str, str]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp)) as server:
        settings = Settings(
            redis_url=server.url,
            data_dir=Path(tmp),
            default_model="",
            max_tasks=k,
            max_model_bytes=4 * 1024**3,
        )
        limits = ModelLimits.from_settings(settings)
        r = redis.Redis.from_url(server.url, socket_timeout=600)
        subset = ",".join(f"task-{i}" for i in range(0, k, max(1, k // 50)))[:100_000]
        with TestClient(create_app(settings)) as client:
            put_model(r, "probe", ModelConfig(learner="ipl", n_features=D), limits)
            client.post("/predict", json={"model": "probe", "task": "a", "x": [0.0] * D})
            for name in LEARNERS:
                _model(r, name, name, k, limits)
                base = f"/models/{name}"
                sub_url = f"{base}/relations?tasks={subset}&top_k=5"
                cold_sub, predict_worst = _predict_during(client, sub_url, "probe")
                warm_sub = _warm(client, sub_url, reps)
                top_url = f"{base}/relations?top_k=10&matrix=false"
                cold_top, top_bytes = _timed(client, top_url)
                warm_top = _warm(client, top_url, reps)
                page = _warm(client, f"{base}/tasks?limit=100", reps)
                every, every_bytes = _timed(client, f"{base}/tasks")
                rows.append(
                    {
                        "learner": name,
                        "subset cold": _ms(cold_sub),
                        "subset warm": _ms(warm_sub),
                        "/predict worst meanwhile": _ms(predict_worst),
                        "top-10 all cold": _ms(cold_top),
                        "top-10 all warm": _ms(warm_top),
                        "top-10 bytes": f"{top_bytes:,}",
                        "/tasks page of 100": _ms(page),
                        f"/tasks all {k}": _ms(every),
                        "/tasks bytes": f"{every_bytes:,}",
                    }
                )
                print(rows[-1], flush=True)
                r.delete(*r.keys(f"omtl:{{{name}}}:*"))
        r.close()
    return rows


def _table(rows: list[dict[str, str]]) -> str:
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row[h] for h in head) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--out", type=Path, default=RESULTS / "relations.md")
    args = parser.parse_args()
    rows = run(args.tasks, args.reps)
    table = _table(rows)
    print(table)
    about = ", ".join(f"{key} {value}" for key, value in machine().items())
    text = (
        f"# /relations and /tasks at {args.tasks:,} tasks\n\n"
        f"`python -m bench.perf.relations --tasks {args.tasks} --reps {args.reps}`; "
        f"milliseconds, in-process ASGI client (no network), d = {D}, "
        f"subset = 50 tasks with top_k = 5; 'cold' includes loading the snapshot into the API. Machine: {about}\n\n{table}\n"
    )
    args.out.write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
