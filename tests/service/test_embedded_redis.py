"""The embedded server: binary, persistence across SIGKILL, directory lock, clean stop."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
import redis

from service.embedded_redis import DataDirLocked, EmbeddedRedis, find_server_binary
from tests.service.helpers import wait_until


def test_the_wheel_binary_runs() -> None:
    out = subprocess.run([find_server_binary(), "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "server v=" in out.stdout


def _aof_bytes(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in data_dir.rglob("*.aof*") if p.is_file())


def test_data_survives_sigkill_and_restart_on_the_same_directory(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path).start()
    try:
        c = redis.Redis.from_url(server.url)
        ids = [c.xadd("omtl:{m}:log", {"k": "e", "n": str(i)}) for i in range(100)]
        c.set("marker-key", "kept")
        c.close()
        # the server appends to its AOF file right after each write (fsync follows within 1 s)
        assert wait_until(lambda: b"marker-key" in _aof_bytes(tmp_path), timeout=10)
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)
        assert server.proc is not None
        assert server.proc.wait(10) == -signal.SIGKILL
    finally:
        server.stop()
    with EmbeddedRedis(tmp_path) as again:
        c = redis.Redis.from_url(again.url)
        assert c.xlen("omtl:{m}:log") == 100
        assert [e[0] for e in c.xrange("omtl:{m}:log")] == ids
        assert c.get("marker-key") == b"kept"
        c.close()


def test_the_data_directory_is_locked_while_a_server_runs(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path), pytest.raises(DataDirLocked, match="in use"):
        EmbeddedRedis(tmp_path).start()
    # released on stop: the directory can be used again
    with EmbeddedRedis(tmp_path) as server:
        assert redis.Redis.from_url(server.url).ping()


def test_sigterm_stop_is_clean(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path).start()
    c = redis.Redis.from_url(server.url)
    c.set("k", "v")
    c.close()
    assert server.stop() == 0
    assert "bye bye" in server.log_path.read_text()
