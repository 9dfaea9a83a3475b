"""Helpers shared by the service tests: condition waits, worker processes, log builders."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

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


def worker_process(redis_url: str, *args: str, **settings: object) -> subprocess.Popen[str]:
    """Start ``python -m service.worker`` with ``REDIS_URL`` and ``OMTL_*`` settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMTL_")}
    env["REDIS_URL"] = redis_url
    env["OMTL_WORKER_METRICS_PORT"] = "0"
    env["OMTL_LOG_LEVEL"] = "warning"
    for key, value in settings.items():
        env[f"OMTL_{key.upper()}"] = str(value)
    return subprocess.Popen(
        [sys.executable, "-m", "service.worker", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
