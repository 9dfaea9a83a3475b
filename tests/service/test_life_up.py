"""``omtl up`` supervises the embedded server: killed, it is back without a manual step."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx2 as httpx
import pytest

from service.embedded_redis import free_port
from tests.service.helpers import api_ready, children, reap, stop_gracefully, up_process, wait_until


@pytest.mark.slow
def test_up_restarts_the_embedded_server_after_it_dies(tmp_path: Path) -> None:
    api_port = free_port()
    proc = up_process(
        tmp_path / "data",
        api_port=api_port,
        worker_metrics_port=free_port(),
        default_n_features=2,
        log_level="warning",
        redis_timeout_s=2,
    )
    base = f"http://127.0.0.1:{api_port}"
    http = httpx.Client(timeout=30)
    body = {"task": "a", "x": [1.0, 2.0]}

    def predicts() -> bool:
        try:
            return http.post(f"{base}/predict", json=body, timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        assert wait_until(predicts, timeout=60, interval=0.1), "the API never served"
        (server_pid,) = children(proc.pid, "-server ")
        os.kill(server_pid, signal.SIGKILL)
        assert wait_until(lambda: children(proc.pid, "-server ") not in ([], [server_pid]), 30)
        assert wait_until(predicts, timeout=30, interval=0.1), "no prediction after the restart"
        assert wait_until(lambda: api_ready(http, base), timeout=10, interval=0.1)
        _, err = stop_gracefully(proc)
    finally:
        http.close()
        reap(proc)
    assert proc.returncode == 0, err
    assert "the embedded server exited with code -9; starting it again" in err
