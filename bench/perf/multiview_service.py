"""Multiview rounds through the service: the worker's drain rate and online mistakes.

``nice -n 10 python -m bench.perf.multiview_service [--n N] [--out FILE]``

For every multiview learner, N labelled rounds of a multiview dataset are
written to a model's log as binary ``k=v`` entries (docs/architecture.md,
"Multiview rounds") on an embedded server, then the real worker drains them
(``Worker.run(until_idle=True)``: read, decode, score, learn, count, snapshot).
Printed per learner: rounds per second (wall clock, and CPU time of this
process, steadier on a shared machine), the worker's online mistakes and those
of the offline ``multiview`` protocol's pass over the same rounds in the same
order (``score_and_learn_views`` round by round): they must be equal.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import redis

from evaluation.multiview import MultiviewDataset, load_multiview
from evaluation.protocols.multiview import build
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_multiview
from service.store.models import ModelConfig, put_model
from service.store.snapshot import read_snapshot
from service.worker import Worker

#: (label, learner, params, dataset spec); ``{n}`` is filled with the round count.
CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("mmperc (primal)", "mmperc", {"form": "primal"}, "multiview-tasks:n={n},K=6,seed=0"),
    ("mmperc (dual)", "mmperc", {"form": "dual"}, "multiview-tasks:n={n},K=6,seed=0"),
    ("multiview-independent", "multiview-independent", {}, "multiview-tasks:n={n},K=6,seed=0"),
    ("matrix-pnorm p=2", "matrix-pnorm", {"p": 2}, "multiview-shared:n={n},K=8,d=20,seed=0"),
    ("multiview-concat", "multiview-concat", {}, "multiview-shared:n={n},K=8,d=20,seed=0"),
    (
        "multiview-independent",
        "multiview-independent",
        {},
        "multiview-shared:n={n},K=8,d=20,seed=0",
    ),
]


def _offline_mistakes(ds: MultiviewDataset, learner: str, params: dict[str, Any]) -> int:
    """Mistakes of the learner on the rounds in log order, on the float32 values the log holds."""
    model, data = build(ds, learner, params, seed=0)
    views = [v.astype(np.float32).astype(np.float64) for v in data.views]
    wrong = 0
    for r in range(data.n):
        s = model.score_and_learn_views([v[r] for v in views], data.y[r], int(data.task[r]))
        wrong += int((s >= 0) != (data.y[r] > 0))
    return wrong


def _config(ds: MultiviewDataset, learner: str, params: dict[str, Any]) -> ModelConfig:
    model, data = build(ds, learner, params, seed=0)
    given = dict(params)
    if "task_dims" in model.hyper:
        given["task_dims"] = data.view_dims
    return ModelConfig(
        learner=learner, params=given, n_features=max(data.view_dims), tasks=data.view_names
    )


def measure(
    r: redis.Redis, settings: Settings, case: tuple[str, str, dict[str, Any], str], n: int
) -> dict[str, Any]:
    """Fill, drain and compare one case."""
    label, learner, params, spec = case
    ds = load_multiview(spec.format(n=n))
    config = _config(ds, learner, params)
    _, data = build(ds, learner, params, seed=0)
    name = f"mv-{abs(hash(label + spec)) % 10**8}"
    put_model(r, name, config)
    with r.pipeline(transaction=False) as p:
        for i in range(data.n):
            views = {t: v[i] for t, v in zip(data.view_names, data.views, strict=True)}
            task = data.view_names[int(data.task[i])]
            p.xadd(keys.log_key(name), encode_multiview(task, views, float(data.y[i])))  # type: ignore[arg-type]
        p.execute()
    wall, cpu = time.perf_counter(), time.process_time()
    result = Worker(settings, [name]).run(until_idle=True, timeout=600)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    snap = read_snapshot(r, name)
    assert snap is not None and result.entries == data.n
    return {
        "learner": label,
        "dataset": ds.name.split(":")[0],
        "D": sum(data.view_dims),
        "rounds": data.n,
        "wall_per_sec": data.n / wall,
        "cpu_per_sec": data.n / cpu,
        "mistakes": int(snap.counters["mistakes"].sum()),
        "offline_mistakes": _offline_mistakes(ds, learner, params),
    }


def table(rows: list[dict[str, Any]]) -> str:
    """The results as a markdown table."""
    out = [
        "| learner | dataset | D | rounds | worker rounds/s (wall) | rounds/s (CPU) | mistakes (worker) | mistakes (offline) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        out.append(
            f"| {row['learner']} | {row['dataset']} | {row['D']} | {row['rounds']} | "
            f"{row['wall_per_sec']:,.0f} | {row['cpu_per_sec']:,.0f} | {row['mistakes']} | "
            f"{row['offline_mistakes']} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run every case and print (and optionally write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="rounds per case (default 5000)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp) / "redis") as server:
        r = redis.Redis.from_url(server.url)
        r.config_set("appendonly", "no")
        settings = Settings(redis_url=server.url, data_dir=Path(tmp), worker_metrics_port=0)
        for case in CASES:
            rows.append(measure(r, settings, case, args.n))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    print(text)
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
