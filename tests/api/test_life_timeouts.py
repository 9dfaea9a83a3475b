"""A stopped or half-open Redis: the hot path answers 503 within the configured
timeout instead of hanging, and reconnects once the server answers again."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings
from service.store.resp import RespConnection


def test_a_stopped_redis_gets_a_503_within_the_timeout(settings: Settings, tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "redis").start()
    assert server.pid is not None
    stopped = False
    try:
        app_settings = settings.model_copy(
            update={"redis_url": server.url, "default_n_features": 2, "redis_timeout_s": 0.5}
        )
        with TestClient(create_app(app_settings)) as client:
            body = {"task": "a", "x": [1, 2]}
            assert client.post("/predict", json=body).status_code == 200
            os.kill(server.pid, signal.SIGSTOP)
            stopped = True
            for _ in range(2):  # the timed-out connection, then a new one to the stopped server
                started = time.monotonic()
                r = client.post("/predict", json=body)
                elapsed = time.monotonic() - started
                assert r.status_code == 503, r.text
                assert "did not answer within 0.5 s" in r.json()["detail"]
                assert 0.4 <= elapsed < 2.0
            os.kill(server.pid, signal.SIGCONT)
            stopped = False
            assert client.post("/predict", json=body).status_code == 200
    finally:
        if stopped and server.pid is not None:
            os.kill(server.pid, signal.SIGCONT)
        server.stop()


def test_a_half_open_server_fails_the_waiting_calls() -> None:
    """A peer that accepts and never answers: every pending call fails at the timeout."""

    async def run() -> tuple[list[BaseException | None], float]:
        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(1 << 20)
            await asyncio.sleep(30)

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        conn = RespConnection(f"redis://127.0.0.1:{port}", timeout=0.3)
        started = time.monotonic()
        results = await asyncio.gather(
            *(conn.call("PING") for _ in range(3)), return_exceptions=True
        )
        elapsed = time.monotonic() - started
        conn.close()
        server.close()
        return [r if isinstance(r, BaseException) else None for r in results], elapsed

    errors, elapsed = asyncio.run(run())
    assert all(isinstance(e, ConnectionError) for e in errors)
    assert "did not answer within 0.3 s" in str(errors[0])
    assert elapsed == pytest.approx(0.3, abs=0.25)
