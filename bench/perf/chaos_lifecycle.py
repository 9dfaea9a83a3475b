"""Chaos scenarios of the model lifecycle, resource limits and hostile state.

Run from the repository root::

    python -m bench.perf.chaos_lifecycle [--cycles 1000] [--crafted 100]

Against an embedded server, with a real worker process (``python -m
service.worker``, its metrics on a local port) and the real ASGI app in this
process, it measures:

* **cycles**: ``--cycles`` create / delete / recreate cycles of one model name
  under traffic (a steady model gets a prediction and an event every cycle),
  alternating learner and dimension (cmtl d = 3, ipl d = 2). Every
  ``--check-every`` cycles the worker's snapshot of the new incarnation must
  hold exactly the incarnation's events with its own learner and dimension.
  Reported: HTTP errors (5xx), dead letters of the cycled model (an event
  applied by a previous incarnation's learner would be one), incarnations
  checked and leaking, and the metric series of the cycled name in the worker
  and the API against the baseline before the first cycle.
* **limits**: a model whose state would be about 2 GB (cmtl, 10^7 features x 13
  tasks) and omtl-logdet with 10,000 initial tasks in one request: the status
  codes, and the RSS of the API process and of the worker before and after.
* **crafted**: ``--crafted`` models whose snapshot or configuration is made
  invalid in one of eleven ways (header fields removed or of the wrong type,
  a member declaring 2 GB, object dtype, truncated or corrupted archives,
  configuration fields removed or over the budget, shape and task count
  mismatches), each with random parameters. Reported: the worker's process id
  before and after (a crash loop would change it), and how many models were
  reported failed, with a reason, in ``GET /models/{m}`` and in the worker's
  ``omtl_model_failed`` gauge; a healthy model must keep serving.

Results go to ``bench/results/chaos_lifecycle.md`` (and ``.json``).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2 as httpx
import numpy as np
import redis
from fastapi.testclient import TestClient

from service import metrics
from service.api.app import create_app
from service.embedded_redis import EmbeddedRedis, free_port
from service.settings import Settings
from service.store import keys
from service.store.models import ModelConfig, initial_snapshot, put_model
from service.store.snapshot import encode, read_snapshot

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def _rss_mib(pid: int) -> float:
    """Resident set size of process ``pid`` in MiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def _worker(url: str, metrics_port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMTL_")}
    env.update(
        REDIS_URL=url,
        OMTL_WORKER_METRICS_PORT=str(metrics_port),
        OMTL_LOG_LEVEL="error",
        OMTL_SNAPSHOT_EVERY_SECONDS="0.2",
        OMTL_LEASE_TTL_MS="1500",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "service.worker"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _series(text: str, model: str) -> int:
    """Lines of a Prometheus exposition with ``model="<model>"``."""
    return sum(1 for line in text.splitlines() if f'model="{model}"' in line)


def _wait(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


# ---------------------------------------------------------------- cycles
def run_cycles(
    client: TestClient, r: redis.Redis, worker_metrics: str, cycles: int, check_every: int
) -> dict[str, Any]:
    """Create / delete / recreate one model name ``cycles`` times under traffic."""
    http = httpx.Client(timeout=10)
    client.put("/models/steady", json={"learner": "cmtl", "n_features": 3, "tasks": ["a", "b"]})
    client.post("/predict", json={"model": "steady", "task": "a", "x": [1, 2, 3]})
    baseline_worker = _series(http.get(worker_metrics).text, "cyc")
    baseline_api = metrics.model_series("cyc")
    shapes = [("cmtl", 3), ("ipl", 2)]
    errors: dict[int, int] = {}
    checked = leaks = dead = peak_worker = peak_api = 0
    started = time.perf_counter()
    for cycle in range(cycles):
        learner, d = shapes[cycle % 2]
        x = [1.0] * d
        answers = [
            client.put("/models/cyc", json={"learner": learner, "n_features": d, "tasks": ["a"]}),
            client.post(
                "/events",
                json={"model": "cyc", "events": [{"task": "a", "x": x, "y": -1}] * 3},
            ),
            client.post("/predict", json={"model": "cyc", "task": "a", "x": x}),
            client.post("/predict", json={"model": "steady", "task": "b", "x": [3, 2, 1]}),
            client.post(
                "/events",
                json={"model": "steady", "events": [{"task": "a", "x": [1, 0, 1], "y": 1}]},
            ),
        ]
        if cycle % check_every == check_every - 1:
            generation = answers[0].json()["generation"]

            def applied(gen: int = generation) -> bool:
                snap = read_snapshot(r, "cyc")
                return (
                    snap is not None
                    and snap.generation == gen
                    and int(snap.counters["events"].sum()) == 4
                )

            checked += 1
            ok = _wait(applied, 30)
            snap = read_snapshot(r, "cyc")
            if (
                not ok
                or snap is None
                or (snap.learner.name, snap.learner.n_features) != (learner, d)
            ):
                leaks += 1
            _wait(lambda: _series(http.get(worker_metrics).text, "cyc") > baseline_worker, 5)
            peak_worker = max(peak_worker, _series(http.get(worker_metrics).text, "cyc"))
            peak_api = max(peak_api, metrics.model_series("cyc"))
        dead += int(r.xlen(keys.dead_key("cyc")))
        answers.append(client.delete("/models/cyc"))
        for a in answers:
            if a.status_code >= 500:
                errors[a.status_code] = errors.get(a.status_code, 0) + 1
    seconds = time.perf_counter() - started
    # the worker notices the last deletion on its next tick and removes the series
    _wait(lambda: _series(http.get(worker_metrics).text, "cyc") <= baseline_worker, 10)
    after_worker = _series(http.get(worker_metrics).text, "cyc")
    _wait(lambda: not r.keys("omtl:{cyc}:*"), 10)  # lease / heartbeat expire by their TTL
    http.close()
    return {
        "cycles": cycles,
        "seconds": round(seconds, 1),
        "http_5xx": errors,
        "dead_letters_of_cycled_model": dead,
        "incarnations_checked": checked,
        "incarnations_leaking_state": leaks,
        "worker_series_baseline": baseline_worker,
        "worker_series_peak": peak_worker,
        "worker_series_after": after_worker,
        "api_series_baseline": baseline_api,
        "api_series_peak": peak_api,
        "api_series_after": metrics.model_series("cyc"),
        "redis_keys_left": sorted(k.decode() for k in r.keys("omtl:{cyc}:*")),
    }


# ---------------------------------------------------------------- limits
def run_limits(client: TestClient, worker_pid: int) -> dict[str, Any]:
    """A ~2 GB model and a 10,000-task request: refused, RSS flat."""
    before = {"api_mib": _rss_mib(os.getpid()), "worker_mib": _rss_mib(worker_pid)}
    big = client.put(
        "/models/huge",
        json={"learner": "cmtl", "n_features": 10_000_000, "tasks": [f"t{i}" for i in range(13)]},
    )
    body = {"learner": "omtl-logdet", "n_features": 2, "tasks": [f"t{i}" for i in range(10_000)]}
    many = client.put("/models/many", json=body)
    time.sleep(2.0)  # the worker's ticks: nothing to load
    after = {"api_mib": _rss_mib(os.getpid()), "worker_mib": _rss_mib(worker_pid)}
    return {
        "two_gb_model": {"status": big.status_code, "detail": big.json()["detail"]},
        "ten_thousand_tasks": {
            "status": many.status_code,
            "body_bytes": len(json.dumps(body)),
            "detail": many.json()["detail"],
        },
        "rss_before": before,
        "rss_after": after,
    }


# ---------------------------------------------------------------- crafted
def _npz_member(name: str, spec: dict[str, Any], data: bytes) -> bytes:
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, spec)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name + ".npy", head.getvalue() + data)
    return buf.getvalue()


def _craft(r: redis.Redis, name: str, kind: str, rng: random.Random) -> None:
    """Give model ``name`` an invalid snapshot or configuration of the given kind."""
    learner, d, tasks = rng.choice([("cmtl", 3, ["a", "b"]), ("omtl-logdet", 4, ["a", "b", "c"])])
    cfg = put_model(r, name, ModelConfig(learner=learner, n_features=d, tasks=tasks))
    snap = initial_snapshot(name, cfg)
    header_bytes, arrays = encode(snap)
    header = json.loads(header_bytes)
    if kind == "header_field_removed":
        del header[rng.choice(["scalars", "generation", "task_names", "last_id", "learner"])]
    elif kind == "header_wrong_type":
        header[rng.choice(["scalars", "task_names", "last_id", "counters"])] = rng.choice(
            [[1], 7, "x", None]
        )
    elif kind == "header_not_an_object":
        header = rng.choice([[1], 3, "snapshot", None])
    elif kind == "member_declares_2_gb":
        spec = {"descr": "<f8", "fortran_order": False, "shape": (rng.randint(2**28, 2**31),)}
        arrays = _npz_member(f"learner.state.{rng.choice(['W_', 'V_'])}", spec, b"\0" * 4096)
    elif kind == "member_object_dtype":
        arrays = _npz_member(
            "learner.state.W_", {"descr": "|O", "fortran_order": False, "shape": (1,)}, b"N."
        )
    elif kind == "archive_truncated":
        arrays = arrays[: rng.randint(1, len(arrays) - 1)]
    elif kind == "archive_member_corrupted":
        with zipfile.ZipFile(io.BytesIO(arrays)) as zf:
            info = zf.infolist()[0]
        start = info.header_offset + 30 + len(info.filename) + len(info.extra)
        data = bytearray(arrays)
        data[rng.randint(start, start + info.compress_size - 1)] ^= 0xFF
        arrays = bytes(data)
    elif kind == "shape_mismatch":
        header["scalars"]["n_features"] = d + rng.randint(1, 50)
    elif kind == "task_count_huge":
        header["scalars"]["n_tasks"] = rng.randint(10**6, 10**12)
    elif kind == "config_field_removed":
        r.hdel(keys.config_key(name), rng.choice(["learner", "n_features", "generation"]))
        return
    elif kind == "config_over_budget":
        r.hset(keys.config_key(name), "n_features", str(rng.randint(10**9, 10**12)))
        return
    else:
        raise ValueError(kind)
    r.hset(
        keys.snapshot_key(name),
        mapping={"version": 1, "header": json.dumps(header), "arrays": arrays},
    )


CRAFT_KINDS = (
    "header_field_removed",
    "header_wrong_type",
    "header_not_an_object",
    "member_declares_2_gb",
    "member_object_dtype",
    "archive_truncated",
    "archive_member_corrupted",
    "shape_mismatch",
    "task_count_huge",
    "config_field_removed",
    "config_over_budget",
)


def run_crafted(
    client: TestClient, r: redis.Redis, worker: subprocess.Popen[bytes], metrics_url: str, n: int
) -> dict[str, Any]:
    """``n`` models with crafted state; the worker must report each and keep serving."""
    rng = random.Random(16)
    pid_before = worker.pid
    rss_before = _rss_mib(worker.pid)
    names = [f"crafted-{i:03d}" for i in range(n)]
    kinds = {name: CRAFT_KINDS[i % len(CRAFT_KINDS)] for i, name in enumerate(names)}
    for name in names:
        _craft(r, name, kinds[name], rng)
    http = httpx.Client(timeout=10)

    def reported() -> int:
        return sum(1 for name in names if r.exists(keys.failed_key(name)))

    _wait(lambda: reported() == n, 60)
    gauge = http.get(metrics_url).text
    failed_gauge = sum(1 for name in names if f'omtl_model_failed{{model="{name}"}} 1.0' in gauge)
    described = [client.get(f"/models/{name}").json() for name in names]
    with_reason = sum(1 for d in described if d.get("status") == "failed" and d.get("failure"))
    reasons: dict[str, str] = {}
    for name, d in zip(names, described, strict=True):
        reasons.setdefault(kinds[name], str(d.get("failure"))[:160])
    steady = client.post("/predict", json={"model": "steady", "task": "a", "x": [1, 2, 3]})
    http.close()
    return {
        "cases": n,
        "kinds": len(CRAFT_KINDS),
        "worker_pid_unchanged": worker.poll() is None and worker.pid == pid_before,
        "worker_rss_mib": {"before": round(rss_before, 1), "after": round(_rss_mib(worker.pid), 1)},
        "reported_failed_in_redis": reported(),
        "failed_gauge_set": failed_gauge,
        "described_failed_with_reason": with_reason,
        "steady_model_predict_status": steady.status_code,
        "reason_per_kind": reasons,
    }


# ---------------------------------------------------------------- report
def _markdown(result: dict[str, Any]) -> str:
    c, lim, cr = result["cycles"], result["limits"], result["crafted"]
    lines = [
        "# Chaos: model lifecycle, resource limits, hostile state",
        "",
        f"`python -m bench.perf.chaos_lifecycle --cycles {c['cycles']} --crafted {cr['cases']}`, "
        f"{result['date']}, {result['machine']}. Embedded server, one worker process, the API "
        "in the benchmark process (real ASGI app).",
        "",
        "## Create / delete / recreate under traffic",
        "",
        "| figure | value |",
        "|---|---|",
        f"| cycles (cmtl d=3 and ipl d=2 alternating, 3 events + 1 prediction each, "
        f"a steady model's prediction and event every cycle) | {c['cycles']} in {c['seconds']} s |",
        f"| HTTP 5xx answers | {sum(c['http_5xx'].values())} |",
        f"| dead letters of the cycled model | {c['dead_letters_of_cycled_model']} |",
        f"| incarnations checked (snapshot = own learner, own dimension, own 4 events) "
        f"| {c['incarnations_checked']} |",
        f"| incarnations with another incarnation's state | {c['incarnations_leaking_state']} |",
        f"| worker metric series (exposition lines) of the name: baseline / while an "
        f"incarnation lives / after | {c['worker_series_baseline']} / "
        f"{c['worker_series_peak']} / {c['worker_series_after']} |",
        f"| API metric series (labelled children) of the name: baseline / while an "
        f"incarnation lives / after | {c['api_series_baseline']} / {c['api_series_peak']} / "
        f"{c['api_series_after']} |",
        f"| Redis keys of the name left after the last delete | {len(c['redis_keys_left'])} |",
        "",
        "## Limits",
        "",
        "| request | status | message |",
        "|---|---|---|",
        f"| cmtl, 10^7 features x 13 tasks (about 2 GB of state) | "
        f"{lim['two_gb_model']['status']} | {lim['two_gb_model']['detail']} |",
        f"| omtl-logdet with 10,000 initial tasks ({lim['ten_thousand_tasks']['body_bytes']} "
        f"byte body) | {lim['ten_thousand_tasks']['status']} | "
        f"{lim['ten_thousand_tasks']['detail']} |",
        "",
        f"RSS before / after: API {lim['rss_before']['api_mib']:.0f} / "
        f"{lim['rss_after']['api_mib']:.0f} MiB, worker {lim['rss_before']['worker_mib']:.0f} / "
        f"{lim['rss_after']['worker_mib']:.0f} MiB.",
        "",
        "## Crafted state",
        "",
        "| figure | value |",
        "|---|---|",
        f"| crafted models ({cr['kinds']} kinds, random parameters) | {cr['cases']} |",
        f"| worker still the same process (no crash, no restart) | {cr['worker_pid_unchanged']} |",
        f"| worker RSS before / after (MiB) | {cr['worker_rss_mib']['before']} / "
        f"{cr['worker_rss_mib']['after']} |",
        f"| marked failed in Redis (`omtl:{{m}}:failed`) | {cr['reported_failed_in_redis']} |",
        f"| `omtl_model_failed` = 1 | {cr['failed_gauge_set']} |",
        f"| `GET /models/{{m}}` status failed with a reason | {cr['described_failed_with_reason']} |",
        f"| a healthy model's `/predict` meanwhile | {cr['steady_model_predict_status']} |",
        "",
        "One reason per kind, as `GET /models/{m}` shows it:",
        "",
        "| kind | reason |",
        "|---|---|",
    ]
    lines += [
        f"| {kind} | {reason.replace('|', '/')} |" for kind, reason in cr["reason_per_kind"].items()
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the three scenarios and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--check-every", type=int, default=25)
    parser.add_argument("--crafted", type=int, default=100)
    parser.add_argument("--out", type=Path, default=RESULTS / "chaos_lifecycle.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp) / "redis") as server:
        port = free_port()
        worker = _worker(server.url, port)
        worker_metrics = f"http://127.0.0.1:{port}/metrics"
        r = redis.Redis.from_url(server.url)
        settings = Settings(redis_url=server.url, default_model="", log_level="error")
        try:
            with TestClient(create_app(settings)) as client:
                _wait(lambda: _reachable(worker_metrics), 30)
                result = {
                    "date": time.strftime("%Y-%m-%d", time.gmtime()),
                    "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                    f"Python {platform.python_version()}",
                    "cycles": run_cycles(client, r, worker_metrics, args.cycles, args.check_every),
                    "limits": run_limits(client, worker.pid),
                    "crafted": run_crafted(client, r, worker, worker_metrics, args.crafted),
                }
        finally:
            worker.terminate()
            worker.wait(30)
            r.close()
    args.out.write_text(_markdown(result))
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    print(json.dumps(result, indent=2))
    return 0


def _reachable(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    sys.exit(main())
