"""``/predict`` requests per second and latency beside a bare FastAPI endpoint (part of ``bench/perf/e2e.py``).

Each app runs in its own ``uvicorn`` process (one worker, uvloop, httptools, no
access log) on 127.0.0.1. The load comes from ``wrk`` when it is installed
(``apt-get install wrk``), else from a bounded Python client loop of keep-alive
connections in threads. Both apps get the same body: one event of the
benchmark model (K = 100 tasks, d = 100).
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from service.embedded_redis import free_port

__all__ = ["LoadResult", "cpu_seconds", "load", "serve"]


@dataclass
class LoadResult:
    """Requests per second and latency percentiles (milliseconds) of one load run."""

    tool: str
    connections: int
    seconds: float
    requests_per_sec: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_us_per_request: float = float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def serve(app: str, env: dict[str, str]) -> Iterator[tuple[int, int]]:
    """Run ``uvicorn app --factory`` on a free port; yields ``(port, pid)``."""
    port = free_port()
    cmd = [
        sys.executable, "-m", "uvicorn", app, "--factory", "--host", "127.0.0.1",
        "--port", str(port), "--no-access-log", "--loop", "uvloop", "--http", "httptools",
        "--log-level", "warning",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env={**os.environ, **env}, cwd=Path(__file__).parents[2])
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{app} exited with {proc.returncode}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
                conn.request("GET", "/docs")
                conn.getresponse().read()
                conn.close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{app} did not start") from None
                time.sleep(0.05)
        yield port, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def _ms(text: str) -> float:
    m = re.match(r"([\d.]+)(us|ms|s)", text)
    if m is None:
        raise ValueError(f"not a wrk duration: {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _wrk(port: int, body: bytes, connections: int, seconds: float) -> LoadResult:
    lua = (
        'wrk.method = "POST"\n'
        'wrk.headers["Content-Type"] = "application/json"\n'
        f"wrk.body = [[{body.decode()}]]\n"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(lua)
        script = f.name
    try:
        url = f"http://127.0.0.1:{port}/predict"
        base = ["wrk", "-t1", f"-c{connections}", "-s", script, "--latency", url]
        subprocess.run([*base[:2], "-d2s", *base[2:]], check=True, capture_output=True)
        out = subprocess.run(
            [*base[:2], f"-d{seconds:g}s", *base[2:]], check=True, capture_output=True, text=True
        ).stdout
    finally:
        os.unlink(script)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"\s50%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"\s99%\s+(\S+)", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = int(bad.group(1)) if bad else 0
    return LoadResult("wrk", connections, seconds, rps, p50, p99, errors)


def _python_load(port: int, body: bytes, connections: int, seconds: float) -> LoadResult:
    latencies: list[list[float]] = [[] for _ in range(connections)]
    errors = [0] * connections
    stop_at = time.perf_counter() + seconds
    headers = {"content-type": "application/json"}

    def client(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        while (t0 := time.perf_counter()) < stop_at:
            conn.request("POST", "/predict", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            latencies[i].append(time.perf_counter() - t0)
            errors[i] += response.status != 200
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    all_ms = np.concatenate([np.asarray(lat) for lat in latencies]) * 1e3
    return LoadResult(
        "python",
        connections,
        seconds,
        all_ms.shape[0] / seconds,
        float(np.percentile(all_ms, 50)),
        float(np.percentile(all_ms, 99)),
        sum(errors),
    )


def load(port: int, body: bytes, connections: int, seconds: float, pids: list[int]) -> LoadResult:
    """Load ``POST /predict`` with ``body`` for ``seconds`` over ``connections`` connections.

    ``cpu_us_per_request`` is the CPU the processes ``pids`` (the server side)
    spent per request during the run, warm-up included: unlike requests per
    second it hardly depends on what else runs on the machine.
    """
    before = sum(cpu_seconds(p) for p in pids)
    if shutil.which("wrk"):
        result = _wrk(port, body, connections, seconds)
        counted = result.requests_per_sec * (seconds + 2)
    else:
        result = _python_load(port, body, connections, seconds)
        counted = result.requests_per_sec * seconds
    spent = sum(cpu_seconds(p) for p in pids) - before
    result.cpu_us_per_request = spent / counted * 1e6 if counted else float("nan")
    return result
