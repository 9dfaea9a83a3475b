"""The README quickstart with keys, for real: ``OMTL_AUTH=required omtl up``, then
``omtl keys create`` in another process (it finds the embedded server), then curl-like calls."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import pytest

from service.embedded_redis import free_port
from tests.service.helpers import api_ready, reap, stop_gracefully, up_process, wait_until

X = [1, 0, 0.5, 0, 0, 0, 0, 0, 0, 0]


@pytest.mark.slow
def test_omtl_up_with_auth_required_and_a_key_from_omtl_keys_create(tmp_path: Path) -> None:
    api_port = free_port()
    data = tmp_path / "data"
    proc = up_process(
        data, api_port=api_port, worker_metrics_port=0, auth="required", log_level="warning"
    )
    base = f"http://127.0.0.1:{api_port}"
    http = httpx.Client(timeout=30)

    try:
        assert wait_until(lambda: api_ready(http, base), timeout=90, interval=0.1), (
            "the API never became ready"
        )
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        env["OMTL_DATA_DIR"] = str(data)
        made = subprocess.run(
            [str(Path(sys.executable).parent / "omtl"), "keys", "create", "--role", "admin"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert made.returncode == 0, made.stderr
        key = made.stdout.strip()
        event = {"task": "alice", "x": X, "ref": "msg-17"}
        assert http.post(f"{base}/predict", json=event).status_code == 401
        answer = http.post(
            f"{base}/predict", json=event, headers={"Authorization": f"Bearer {key}"}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["score"] == 0.0
        out, err = stop_gracefully(proc)
    finally:
        http.close()
        reap(proc)
    assert proc.returncode == 0, err
    assert "auth            required: Authorization: Bearer <key>" in out
    assert key not in out + err  # keys are never logged
    assert not (data / "redis" / "url").exists()  # removed on stop
