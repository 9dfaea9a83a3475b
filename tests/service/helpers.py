"""Helpers shared by the service tests: condition waits, worker processes, log builders."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2 as httpx
import numpy as np
import redis

from service.store import connect
from service.store.snapshot import read_version

ROOT = Path(__file__).resolve().parents[2]


def wait_until(condition: Callable[[], object], timeout: float, interval: float = 0.01) -> bool:
    """Poll ``condition`` until it is truthy or ``timeout`` seconds pass; returns the outcome."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def up_process(data_dir: Path, **settings: object) -> subprocess.Popen[str]:
    """Start ``omtl up --data-dir data_dir`` without ``REDIS_URL``, with ``OMTL_*`` settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMTL_")}
    env.pop("REDIS_URL", None)
    for key, value in settings.items():
        env[f"OMTL_{key.upper()}"] = str(value)
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "omtl"), "up", "--data-dir", str(data_dir)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def children(pid: int, marker: str) -> list[int]:
    """Live child processes of ``pid`` whose command line contains ``marker``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z" and marker in cmdline:
            found.append(int(stat.parent.name))
    return found


def worker_process(
    redis_url: str,
    *args: str,
    module: tuple[str, ...] = ("service.worker",),
    **settings: object,
) -> subprocess.Popen[str]:
    """Start ``python -m service.worker`` with ``REDIS_URL`` and ``OMTL_*`` settings
    (``module``: another module, with its own arguments, that runs the worker)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMTL_")}
    env["REDIS_URL"] = redis_url
    env["OMTL_WORKER_METRICS_PORT"] = "0"
    env["OMTL_LOG_LEVEL"] = "warning"
    for key, value in settings.items():
        env[f"OMTL_{key.upper()}"] = str(value)
    return subprocess.Popen(
        [sys.executable, "-m", *module, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def assert_same_learner(a: Any, b: Any) -> None:
    """Two learners hold the same state, array by array and bit for bit."""
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key, value in sa.items():
        if isinstance(value, np.ndarray):
            other = np.asarray(sb[key])
            assert value.dtype == other.dtype and value.shape == other.shape, key
            assert value.tobytes() == other.tobytes(), key
        else:
            assert value == sb[key], key


def assert_same_snapshot(a: Any, b: Any) -> None:
    """Two snapshots hold the same learner state, task names, counters and totals."""
    assert_same_learner(a.learner, b.learner)
    assert a.task_names == b.task_names
    assert a.counters.keys() == b.counters.keys()
    for name, counts in a.counters.items():
        assert np.array_equal(counts, b.counters[name]), name
    assert a.totals == b.totals


def _kill_after_progress(
    client: redis.Redis, model: str, proc: subprocess.Popen[str], rng: np.random.Generator
) -> bool:
    """Wait for a snapshot by this worker, a random moment more, then SIGKILL it; False
    when it finished first."""
    start = read_version(client, model) or 0
    # wait for progress: a snapshot written by this life (or the end of the run)
    assert wait_until(
        lambda: (read_version(client, model) or 0) > start or proc.poll() is not None,
        timeout=60,
    )
    # then let it run a random little while longer before the kill
    wait_until(lambda: proc.poll() is not None, timeout=float(rng.uniform(0.0, 0.03)))
    if proc.poll() is not None:
        proc.communicate()
        return False
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    return True


def kill_worker_while_it_works(
    redis_url: str,
    model: str,
    worker_id: str,
    kills: int,
    rng: np.random.Generator,
    on_kill: Callable[[], None] | None = None,
    module: tuple[str, ...] = ("service.worker",),
    **settings: object,
) -> tuple[int, int]:
    """Run ``--until-idle`` workers on ``model``, SIGKILLing each one a random moment after
    it wrote a snapshot, ``kills`` times, then let the last one finish; ``(kills, lives)``.

    ``on_kill`` runs after each kill (e.g. to note where the snapshot was); ``module``
    runs the workers (see :func:`worker_process`)."""
    client = connect(redis_url)  # a single server or a cluster (redis+cluster://)
    done = lives = 0
    try:
        while True:
            lives += 1
            proc = worker_process(
                redis_url,
                "--model",
                model,
                "--until-idle",
                "--worker-id",
                worker_id,
                module=module,
                **settings,
            )
            if done >= kills:
                out, err = proc.communicate(timeout=120)
                assert proc.returncode == 0, err
                assert json.loads(out)["entries"] > 0
                return done, lives
            if not _kill_after_progress(client, model, proc, rng):
                return done, lives
            done += 1
            if on_kill is not None:
                on_kill()
    finally:
        client.close()


def api_ready(http: httpx.Client, base: str) -> bool:
    """Whether the API at ``base`` answers ``GET /health/ready`` with 200 now."""
    try:
        return http.get(f"{base}/health/ready", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def stop_gracefully(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[str, str]:
    """SIGTERM, then the process's whole output ``(stdout, stderr)``."""
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=timeout)
    return out, err


def reap(proc: subprocess.Popen[str]) -> None:
    """Kill and wait for ``proc`` if it still runs (the ``finally`` of a test)."""
    if proc.poll() is None:
        proc.kill()
        proc.communicate()
