"""``python -m bench.chaos``: the service at production scale and under failures (run by
command, not in CI). Each scenario has a flag for its size or duration; figures go to
``bench/results/chaos/<scenario>.json`` and are summarised in ``bench/results/chaos.md``.

Scenarios (``--only NAME`` runs one; default: all of them):

* ``sse``: ``--sse-subscribers`` (1000) label-request subscribers idle for
  ``--sse-idle`` seconds (600), then a burst of ``--sse-burst`` (200) requests
  while ``/predict`` is under load: all delivered? ``/predict`` p99 during the
  burst, Redis connections used.
* ``backlog``: the worker paused (SIGSTOP) while ``--backlog-events``
  (1,000,000) events arrive, half through ``POST /events`` (100 per request),
  half by direct ``XADD`` from a producer that respects the backlog bound as the
  README describes; then the worker resumes. Acknowledged, refused (429 / the
  producer's own check), applied, lost.
* ``logdet``: an omtl-logdet model with ``--logdet-tasks`` (5000) tasks and a
  stream of labelled events, followed for ``--logdet-seconds`` (600): created
  or refused? does it advance (events applied, snapshots) without the
  reload-and-replay loop?
* ``kills``: live ``/predict`` traffic while the worker is SIGKILLed
  ``--kills-worker`` (25) times, the API ``--kills-api`` (3) times and the Redis
  server ``--kills-redis`` (3) times (restarted on its port and data directory,
  ``appendfsync always``); then the
  final state is compared bit for bit with one uninterrupted run of the same
  log, and every acknowledged event is looked up.
* ``soak``: ``--soak-minutes`` (30) of steady mixed traffic (predictions,
  labelled batches, an annotator on the label-request stream) with the RSS of
  the worker, the API and Redis sampled every ``--soak-sample`` seconds (30).

Every scenario starts its own embedded Redis server (``service.embedded_redis``)
in a temporary directory and the API (uvicorn, one process) against it.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import ExitStack, contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import redis  # noqa: E402

from bench import RESULTS  # noqa: E402
from bench.perf.e2e_http import serve  # noqa: E402
from service.embedded_redis import EmbeddedRedis  # noqa: E402
from service.store import keys  # noqa: E402
from service.store.codec import encode_event  # noqa: E402
from service.store.models import get_model, put_model  # noqa: E402
from service.store.snapshot import read_snapshot  # noqa: E402

#: Where each scenario writes its figures.
OUT = RESULTS / "chaos"
APP = "service.api.app:create_app"
D = 10


def _log(message: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {message}", flush=True)


def _loadavg() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


@contextmanager
def _redis() -> Iterator[tuple[EmbeddedRedis, redis.Redis]]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedRedis(Path(tmp) / "redis") as server,
    ):
        r = redis.Redis.from_url(server.url)
        try:
            yield server, r
        finally:
            r.close()


def _env(url: str, **extra: Any) -> dict[str, str]:
    env = {
        "REDIS_URL": url,
        "OMTL_DEFAULT_MODEL": "default",
        "OMTL_DEFAULT_LEARNER": "cmtl",
        "OMTL_DEFAULT_N_FEATURES": str(D),
        "OMTL_LOG_LEVEL": "warning",
    }
    env.update({f"OMTL_{k.upper()}": str(v) for k, v in extra.items()})
    return env


# --------------------------------------------------------------------------- HTTP helpers
async def _http(port: int, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    """One HTTP/1.0 request on a fresh connection: (status, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = f"{method} {path} HTTP/1.0\r\nHost: chaos\r\nContent-Length: {len(body)}\r\n"
    writer.write(head.encode() + b"content-type: application/json\r\n\r\n" + body)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    data = await reader.read()
    writer.close()
    return status, data


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


class Subscriber:
    """One ``GET /queries`` client (HTTP/1.0: the body ends when the server closes)."""

    def __init__(self, port: int, query: str = "") -> None:
        self.port, self.query = port, query
        self.ids: list[str] = []
        self.comments = 0
        self.closed = False
        self.error: str | None = None

    async def run(self) -> None:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            writer.write(f"GET /queries?{self.query} HTTP/1.0\r\nHost: chaos\r\n\r\n".encode())
            await writer.drain()
            status = await reader.readline()
            if b" 200 " not in status:
                self.error = status.decode(errors="replace").strip()
                return
            while (await reader.readline()) not in (b"\r\n", b""):
                pass
            last_id = ""
            while line := await reader.readline():
                if line.startswith(b":"):
                    self.comments += 1
                elif line.startswith(b"id: "):
                    last_id = line[4:].strip().decode()
                elif line.startswith(b"event: label_request"):
                    self.ids.append(last_id)
            writer.close()
        except OSError as exc:
            self.error = repr(exc)
        finally:
            self.closed = True


async def _predict_load(port: int, stop: asyncio.Event, clients: int) -> list[float]:
    """``clients`` concurrent /predict loops until ``stop``; latencies in ms (non-200 = inf)."""
    rng = np.random.default_rng(0)
    latencies: list[float] = []

    async def loop(i: int) -> None:
        while not stop.is_set():
            body = json.dumps({"task": f"t{i % 5}", "x": rng.normal(size=D).tolist()}).encode()
            t0 = time.perf_counter()
            status, _ = await _http(port, "POST", "/predict", body)
            ms = (time.perf_counter() - t0) * 1000
            latencies.append(ms if status == 200 else float("inf"))

    await asyncio.gather(*(loop(i) for i in range(clients)))
    return latencies


# --------------------------------------------------------------------------- scenario: sse
def scenario_sse(args: argparse.Namespace) -> dict[str, Any]:
    """Many idle subscribers, then a burst under /predict load."""
    n, idle, burst = args.sse_subscribers, args.sse_idle, args.sse_burst
    with _redis() as (server, r), serve(APP, _env(server.url)) as (port, _pid):
        before = int(r.info("clients")["connected_clients"])

        async def run() -> dict[str, Any]:
            subs = [Subscriber(port) for _ in range(n)]
            tasks = [asyncio.create_task(s.run()) for s in subs]
            _log(f"sse: {n} subscribers connecting, idle {idle:.0f} s")
            started = time.monotonic()
            peak = 0
            while time.monotonic() - started < idle:
                await asyncio.sleep(min(5.0, idle))
                peak = max(peak, int(r.info("clients")["connected_clients"]) - before)
            alive = sum(not s.closed for s in subs)
            errors = [s.error for s in subs if s.error]
            stop = asyncio.Event()
            load = asyncio.create_task(_predict_load(port, stop, 8))
            await asyncio.sleep(1.0)
            t0 = time.monotonic()
            ids = [
                r.xadd(keys.queries_key("default"), {"event": f"{i + 1}-0", "task": "a"}).decode()
                for i in range(burst)
            ]
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not all(len(s.ids) >= burst for s in subs):
                await asyncio.sleep(0.05)
            delivered_s = time.monotonic() - t0
            await asyncio.sleep(1.0)
            stop.set()
            latencies = await load
            peak = max(peak, int(r.info("clients")["connected_clients"]) - before)
            complete = sum(s.ids == ids for s in subs)
            for t in tasks:
                t.cancel()
            ok = [v for v in latencies if v != float("inf")]
            return {
                "subscribers": n,
                "idle_s": idle,
                "burst": burst,
                "alive_after_idle": alive,
                "subscriber_errors": errors[:5],
                "keepalives_per_subscriber": min(s.comments for s in subs),
                "all_requests_delivered_to": complete,
                "burst_delivered_within_s": round(delivered_s, 2),
                "predict_requests": len(latencies),
                "predict_errors": len(latencies) - len(ok),
                "predict_p50_ms": round(_percentile(ok, 50), 2),
                "predict_p99_ms": round(_percentile(ok, 99), 2),
                "redis_connections_used_peak": peak,
            }

        return asyncio.run(run())


# --------------------------------------------------------------------------- processes
ROOT = Path(__file__).resolve().parents[1]


def _worker(url: str, log: Path, *args: str, **settings: Any) -> subprocess.Popen[bytes]:
    """``python -m service.worker`` against ``url`` (its output appended to ``log``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMTL_")}
    env.update(_env(url, worker_metrics_port=0, **settings))
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "service.worker", *args],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def _post(port: int, path: str, body: Any, conn: dict[str, Any]) -> tuple[int, Any]:
    """POST JSON on a kept-alive connection held in ``conn`` (reconnecting on errors)."""
    data = json.dumps(body).encode()
    try:
        if conn.get("port") != port or conn.get("c") is None:
            conn["c"] = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn["port"] = port
        c = conn["c"]
        c.request("POST", path, body=data, headers={"content-type": "application/json"})
        response = c.getresponse()
        payload = response.read()
        return response.status, json.loads(payload) if payload else None
    except (OSError, http.client.HTTPException):
        if conn.get("c") is not None:
            conn["c"].close()
        conn["c"] = None
        return 0, None


def _snapshot_events(r: redis.Redis, model: str) -> int:
    snap = read_snapshot(r, model)
    return -1 if snap is None else int(snap.totals["events"])


def _wait_applied(r: redis.Redis, model: str, events: int, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout and _snapshot_events(r, model) < events:
        time.sleep(0.5)
    return time.monotonic() - started


# --------------------------------------------------------------------------- scenario: backlog
def _backlog(r: redis.Redis, model: str) -> int:
    """The backlog as README's direct producers compute it."""
    applied, generation = r.hmget(keys.progress_key(model), ["applied", "generation"])
    current = r.hget(keys.config_key(model), "generation")
    done = int(applied) if applied is not None and generation == current else 0
    return int(r.xlen(keys.log_key(model))) - done


def scenario_backlog(args: argparse.Namespace) -> dict[str, Any]:
    """A paused worker, a million events: 0 acknowledged lost."""
    total = args.backlog_events
    bound = args.backlog_bound
    via_api, direct = total // 2, total - total // 2
    counts = {"api_acked": 0, "api_refused_429": 0, "api_other": 0}
    counts.update({"direct_acked": 0, "direct_refused": 0})
    with (
        _redis() as (server, r),
        serve(APP, _env(server.url, max_backlog=bound)) as (port, _),
        tempfile.TemporaryDirectory() as tmp,
    ):
        worker = _worker(server.url, Path(tmp) / "worker.log", "--model", "default")
        while r.get(keys.heartbeat_key("default")) is None:
            time.sleep(0.1)
        worker.send_signal(signal.SIGSTOP)
        _log(f"backlog: worker paused; {via_api} events via /events, {direct} by XADD")
        rng = np.random.default_rng(0)

        def through_api(share: int, seed: int) -> None:
            g = np.random.default_rng(seed)
            conn: dict[str, Any] = {}
            for _ in range(share // 100):
                X = g.normal(size=(100, D)).round(4)
                events = [{"task": f"t{i % 10}", "x": X[i].tolist(), "y": 1} for i in range(100)]
                status, _ = _post(port, "/events", {"events": events}, conn)
                key = {202: "api_acked", 429: "api_refused_429"}.get(status, "api_other")
                counts[key] += 100

        def by_xadd() -> None:
            left = direct
            log_key = keys.log_key("default")
            while left > 0:
                room = bound - _backlog(r, "default")
                if room <= 0:  # the README's producer: wait and retry; here it gives up
                    counts["direct_refused"] += left
                    return
                n = min(1000, room, left)
                X = rng.normal(size=(n, D)).astype(np.float32)
                with r.pipeline(transaction=False) as p:
                    for i in range(n):
                        p.xadd(log_key, encode_event(f"t{i % 10}", X[i], y=1.0, binary=True))
                    p.execute()
                counts["direct_acked"] += n
                left -= n

        started = time.monotonic()
        threads = [threading.Thread(target=through_api, args=(via_api // 2, s)) for s in (1, 2)]
        threads.append(threading.Thread(target=by_xadd))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        produce_s = time.monotonic() - started
        acked = counts["api_acked"] + counts["direct_acked"]
        log_entries = int(r.xlen(keys.log_key("default")))
        _log(f"backlog: {acked} acknowledged, log {log_entries} entries; resuming the worker")
        worker.send_signal(signal.SIGCONT)
        drain_s = _wait_applied(r, "default", acked, args.backlog_drain_timeout)
        applied = _snapshot_events(r, "default")
        dead = int(r.xlen(keys.dead_key("default")))
        worker.terminate()
        worker.wait(60)
        return {
            "events_offered": total,
            "max_backlog_entries": bound,
            **counts,
            "acknowledged": acked,
            "log_entries_while_paused": log_entries,
            "produce_seconds": round(produce_s, 1),
            "applied_after_resume": applied,
            "drain_seconds": round(drain_s, 1),
            "dead_letters": dead,
            "acknowledged_lost": acked - applied,
        }


# --------------------------------------------------------------------------- scenario: logdet
def scenario_logdet(args: argparse.Namespace) -> dict[str, Any]:
    """A huge omtl-logdet model: refused at creation, or it advances."""
    k = args.logdet_tasks
    spec = {
        "learner": "omtl-logdet",
        "n_features": D,
        "tasks": [f"t{i}" for i in range(k)],
        "params": {"epoch_rounds": 1},
    }
    with (
        _redis() as (server, r),
        serve(APP, _env(server.url)) as (port, _),
        tempfile.TemporaryDirectory() as tmp,
    ):
        t0 = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        headers = {"content-type": "application/json"}
        conn.request("PUT", "/models/big", body=json.dumps(spec), headers=headers)
        response = conn.getresponse()
        status, answer = response.status, json.loads(response.read() or b"null")
        create_s = time.monotonic() - t0
        out: dict[str, Any] = {
            "tasks": k,
            "create_status": status,
            "create_seconds": round(create_s, 1),
        }
        if status != 201:
            out["create_answer"] = answer
            return out
        rng = np.random.default_rng(0)
        log_key = keys.log_key("big")
        for i in range(args.logdet_events):
            x = rng.normal(size=D).astype(np.float32)
            r.xadd(log_key, encode_event(f"t{i % k}", x, y=1.0 if i % 2 else -1.0, binary=True))
        log_path = Path(tmp) / "worker.log"
        worker = _worker(server.url, log_path, "--model", "big")
        samples = []
        started = time.monotonic()
        while time.monotonic() - started < args.logdet_seconds:
            time.sleep(10)
            snap_version = r.hget(keys.snapshot_key("big"), "version")
            samples.append(
                {
                    "s": round(time.monotonic() - started),
                    "events_in_snapshot": _snapshot_events(r, "big"),
                    "snapshot_version": int(snap_version or 0),
                    "worker_rss_mb": _rss_mb(worker.pid),
                }
            )
            _log(f"logdet: {samples[-1]}")
            if samples[-1]["events_in_snapshot"] >= args.logdet_events:
                break
        worker.terminate()  # SIGTERM: it stops after the entry in hand, snapshots, exits
        t_stop = time.monotonic()
        try:
            worker.wait(900)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        stop_s = time.monotonic() - t_stop
        text = log_path.read_text(errors="replace")
        out.update(
            {
                "events": args.logdet_events,
                "samples": samples,
                "drops": [
                    line.split("dropped model")[1]
                    for line in text.splitlines()
                    if "dropped model" in line
                ],
                "lease_lost_drops": text.count("lease lost"),
                "sigterm_to_exit_seconds": round(stop_s, 1),
                "final_events_in_snapshot": _snapshot_events(r, "big"),
            }
        )
        return out


# --------------------------------------------------------------------------- scenario: kills
def _state_arrays(r: redis.Redis, model: str) -> dict[str, Any]:
    snap = read_snapshot(r, model)
    assert snap is not None
    state = snap.learner.state_dict()
    state["_counters"] = {k: np.asarray(v).tolist() for k, v in snap.counters.items()}
    state["_totals"] = dict(snap.totals)
    return state


def _identical(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            xa, ya = np.asarray(x), np.asarray(y)
            if xa.dtype != ya.dtype or xa.shape != ya.shape or xa.tobytes() != ya.tobytes():
                return False
        elif x != y:
            return False
    return True


def scenario_kills(args: argparse.Namespace) -> dict[str, Any]:
    """SIGKILLs of the worker and the API under live traffic; the state stays exact."""
    with _redis() as (server, r), tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp) / "worker.log"
        env = _env(server.url)
        stack = ExitStack()
        port, api_pid = stack.enter_context(serve(APP, env))
        ports = {"port": port}
        worker = _worker(server.url, log_path, "--model", "default", "--worker-id", "w")
        acked: list[str] = []
        failed = [0]
        stop = threading.Event()

        def traffic(seed: int) -> None:
            g = np.random.default_rng(seed)
            conn: dict[str, Any] = {}
            while not stop.is_set():
                event = {"task": f"t{g.integers(5)}", "x": g.normal(size=D).round(3).tolist()}
                if g.random() < 0.5:  # a prediction (unlabelled event)
                    status, answer = _post(ports["port"], "/predict", event, conn)
                    ids = [answer["event_id"]] if status == 200 else []
                else:  # a labelled event
                    event["y"] = float(g.choice([-1, 1]))
                    status, answer = _post(ports["port"], "/events", {"events": [event]}, conn)
                    ids = answer["event_ids"] if status == 202 else []
                if ids:
                    acked.extend(ids)
                else:
                    failed[0] += 1
                    time.sleep(0.05)

        threads = [threading.Thread(target=traffic, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        n_worker, n_api, n_redis = args.kills_worker, args.kills_api, args.kills_redis
        api_every = max(1, n_worker // max(1, n_api))
        redis_every = max(1, n_worker // max(1, n_redis))
        api_kills = redis_kills = 0
        for i in range(n_worker):
            time.sleep(args.kills_interval)
            worker.kill()
            worker.wait()
            if api_kills < n_api and (i + 1) % api_every == 0:
                os.kill(api_pid, signal.SIGKILL)
                stack.close()
                stack = ExitStack()
                ports["port"], api_pid = stack.enter_context(serve(APP, env))
                api_kills += 1
            if redis_kills < n_redis and (i + 1) % redis_every == redis_every // 2:
                # the server itself, mid-traffic; started again on its port and data directory
                assert server.proc is not None
                server.proc.kill()
                server.stop()
                server.start()
                redis_kills += 1
            worker = _worker(server.url, log_path, "--model", "default", "--worker-id", "w")
            _log(
                f"kills: worker {i + 1}/{n_worker}, api {api_kills}/{n_api}, "
                f"redis {redis_kills}/{n_redis}, acked {len(acked)}"
            )
        time.sleep(args.kills_interval)
        stop.set()
        for t in threads:
            t.join()
        stack.close()
        worker.terminate()
        worker.wait(60)
        final = _worker(server.url, log_path, "--model", "default", "--until-idle")
        final.wait(600)
        # every acknowledged event is in the log and applied
        log_key = keys.log_key("default")
        present = {e[0].decode() for e in r.xrange(log_key)}
        missing = [e for e in acked if e.split("/")[0] not in present]
        applied = _snapshot_events(r, "default")
        # the same log applied by one uninterrupted worker
        config = get_model(r, "default")
        assert config is not None
        put_model(r, "replica", config.model_copy(update={"generation": 0}))
        with r.pipeline(transaction=False) as p:
            for entry_id, fields in r.xrange(log_key):
                p.xadd(keys.log_key("replica"), fields, id=entry_id)
            p.execute()
        replica = _worker(server.url, log_path, "--model", "replica", "--until-idle")
        replica.wait(600)
        same = _identical(_state_arrays(r, "default"), _state_arrays(r, "replica"))
        text = log_path.read_text(errors="replace")
        return {
            "worker_sigkills": n_worker,
            "api_sigkills": api_kills,
            "redis_sigkills": redis_kills,
            "redis_appendfsync": server.appendfsync,
            "seconds_between_kills": args.kills_interval,
            "acknowledged": len(acked),
            "requests_failed_during_kills": failed[0],
            "acknowledged_missing_from_log": len(missing),
            "events_applied": applied,
            "log_entries": len(present),
            "bit_identical_to_uninterrupted_run": same,
            "worker_errors_logged": text.count("Traceback"),
        }


# --------------------------------------------------------------------------- scenario: soak
def scenario_soak(args: argparse.Namespace) -> dict[str, Any]:
    """Steady mixed traffic with the processes' memory sampled."""
    seconds = args.soak_minutes * 60
    extra = {"stream_maxlen": args.soak_keep}
    with (
        _redis() as (server, r),
        serve(APP, _env(server.url, **extra)) as (port, api_pid),
        tempfile.TemporaryDirectory() as tmp,
    ):
        worker = _worker(server.url, Path(tmp) / "worker.log", "--model", "default", **extra)
        stop = threading.Event()
        statuses: dict[str, int] = {}

        def count(kind: str, status: int) -> None:
            statuses[f"{kind} {status}"] = statuses.get(f"{kind} {status}", 0) + 1

        def producer() -> None:
            g = np.random.default_rng(0)
            conn: dict[str, Any] = {}
            tick = 0
            while not stop.is_set():
                tick += 1
                x = g.normal(size=D).round(3).tolist()
                status, _ = _post(port, "/predict", {"task": f"t{tick % 20}", "x": x}, conn)
                count("predict", status)
                if tick % 10 == 0:
                    X = g.normal(size=(10, D)).round(3)
                    events = [
                        {"task": f"t{i}", "x": X[i].tolist(), "y": float(g.choice([-1, 1]))}
                        for i in range(10)
                    ]
                    status, _ = _post(port, "/events", {"events": events}, conn)
                    count("events", status)
                time.sleep(1.0 / args.soak_rate)

        def annotator() -> None:
            conn: dict[str, Any] = {}
            g = np.random.default_rng(1)
            while not stop.is_set():
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                try:
                    c.request("GET", "/queries?timeout=30")
                    for raw in c.getresponse():
                        line = raw.decode()
                        if line.startswith("data: "):
                            event_id = json.loads(line[6:])["event_id"]
                            body = {"event_id": event_id, "y": float(g.choice([-1, 1]))}
                            status, _ = _post(port, "/label", body, conn)
                            count("label", status)
                        if stop.is_set():
                            break
                except (OSError, http.client.HTTPException):
                    time.sleep(0.5)
                finally:
                    c.close()

        threads = [threading.Thread(target=producer), threading.Thread(target=annotator)]
        for t in threads:
            t.start()
        samples = []
        started = time.monotonic()
        redis_pid = server.pid or 0
        while time.monotonic() - started < seconds:
            time.sleep(min(args.soak_sample, seconds))
            info = r.info("memory")
            samples.append(
                {
                    "s": round(time.monotonic() - started),
                    "api_rss_mb": _rss_mb(api_pid),
                    "worker_rss_mb": _rss_mb(worker.pid),
                    "redis_rss_mb": _rss_mb(redis_pid),
                    "redis_used_mb": round(int(info["used_memory"]) / 2**20, 1),
                    "log_entries": int(r.xlen(keys.log_key("default"))),
                    "labels_hash": int(r.hlen(keys.labels_key("default"))),
                }
            )
            _log(f"soak: {samples[-1]}")
        stop.set()
        for t in threads:
            t.join(60)
        worker.terminate()
        worker.wait(60)
        return {
            "minutes": args.soak_minutes,
            "rate_predict_per_s": args.soak_rate,
            "stream_maxlen": args.soak_keep,
            "statuses": statuses,
            "events_applied": _snapshot_events(r, "default"),
            "samples": samples,
        }


# --------------------------------------------------------------------------- scenario: lifecycle
def scenario_lifecycle(args: argparse.Namespace) -> dict[str, Any]:
    """Model lifecycle and hostile state (:mod:`bench.perf.chaos_lifecycle`): create /
    delete / recreate cycles under traffic, requests over the memory budget and the task
    limit, crafted state in Redis. Its tables go to ``bench/results/chaos_lifecycle.md``."""
    from bench.perf import chaos_lifecycle

    code = chaos_lifecycle.main(
        ["--cycles", str(args.lifecycle_cycles), "--crafted", str(args.lifecycle_crafted)]
    )
    return {"exit_code": code, "results": "bench/results/chaos_lifecycle.md"}


SCENARIOS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "sse": scenario_sse,
    "backlog": scenario_backlog,
    "logdet": scenario_logdet,
    "kills": scenario_kills,
    "soak": scenario_soak,
    "lifecycle": scenario_lifecycle,
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    p.add_argument("--only", choices=sorted(SCENARIOS), action="append", help="scenario(s) to run")
    p.add_argument("--sse-subscribers", type=int, default=1000)
    p.add_argument("--sse-idle", type=float, default=600.0, help="seconds the subscribers idle")
    p.add_argument("--sse-burst", type=int, default=200, help="label requests in the burst")
    p.add_argument("--backlog-events", type=int, default=1_000_000)
    p.add_argument("--backlog-bound", type=int, default=100_000, help="OMTL_MAX_BACKLOG")
    p.add_argument("--backlog-drain-timeout", type=float, default=1800.0)
    p.add_argument("--logdet-tasks", type=int, default=5000)
    p.add_argument("--logdet-events", type=int, default=40)
    p.add_argument("--logdet-seconds", type=float, default=600.0)
    p.add_argument("--kills-worker", type=int, default=25)
    p.add_argument("--kills-api", type=int, default=3)
    p.add_argument("--kills-redis", type=int, default=3, help="SIGKILLs of the Redis server")
    p.add_argument("--kills-interval", type=float, default=4.0, help="seconds between kills")
    p.add_argument("--soak-minutes", type=float, default=30.0)
    p.add_argument("--soak-rate", type=float, default=50.0, help="/predict calls per second")
    p.add_argument("--soak-sample", type=float, default=30.0, help="seconds between samples")
    p.add_argument("--soak-keep", type=int, default=20_000, help="OMTL_STREAM_MAXLEN")
    p.add_argument("--lifecycle-cycles", type=int, default=1000)
    p.add_argument("--lifecycle-crafted", type=int, default=100, help="crafted-state cases")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    for name in args.only or list(SCENARIOS):
        load_before = _loadavg()
        started = time.monotonic()
        figures = SCENARIOS[name](args)
        figures["seconds"] = round(time.monotonic() - started, 1)
        figures["loadavg_before"] = load_before
        figures["loadavg_after"] = _loadavg()
        figures["cpus"] = os.cpu_count()
        (OUT / f"{name}.json").write_text(json.dumps(figures, indent=2) + "\n")
        _log(f"{name}: {json.dumps(figures)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
