"""``python -m bench.chaos``: the service at production scale and under failures (run by
command, not in CI). Each scenario has a flag for its size or duration; figures go to
``bench/results/chaos/<scenario>.json`` and are summarised in ``bench/results/chaos.md``.

Scenarios (``--only NAME`` runs one; default: all of them):

* ``sse``: ``--sse-subscribers`` (1000) label-request subscribers idle for
  ``--sse-idle`` seconds (600), then a burst of ``--sse-burst`` (200) requests
  while ``/predict`` is under load: all delivered? ``/predict`` p99 during the
  burst, Redis connections used.

Every scenario starts its own embedded Redis server (``service.embedded_redis``)
in a temporary directory and the API (uvicorn, one process) against it.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import redis  # noqa: E402

from bench import RESULTS  # noqa: E402
from bench.perf.e2e_http import serve  # noqa: E402
from service.embedded_redis import EmbeddedRedis  # noqa: E402
from service.store import keys  # noqa: E402

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


SCENARIOS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "sse": scenario_sse,
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    p.add_argument("--only", choices=sorted(SCENARIOS), action="append", help="scenario(s) to run")
    p.add_argument("--sse-subscribers", type=int, default=1000)
    p.add_argument("--sse-idle", type=float, default=600.0, help="seconds the subscribers idle")
    p.add_argument("--sse-burst", type=int, default=200, help="label requests in the burst")
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
