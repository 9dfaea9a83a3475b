"""A Redis server that goes away turns requests into 503 answers, not 500s or hangs."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from service.api.app import create_app
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings


def test_requests_answer_503_while_redis_is_down(settings: Settings, tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "redis").start()
    try:
        app_settings = settings.model_copy(
            update={"redis_url": server.url, "default_n_features": 2}
        )
        with TestClient(create_app(app_settings)) as client:
            ok = client.post("/predict", json={"task": "a", "x": [1, 2]})
            assert ok.status_code == 200
            server.stop()
            for path, body in (
                ("/predict", {"task": "a", "x": [1, 2]}),
                ("/predict", {"model": "other", "task": "a", "x": [1, 2]}),
                ("/label", {"event_id": ok.json()["event_id"], "y": 1}),
            ):
                r = client.post(path, json=body)
                assert r.status_code == 503, (path, r.text)
                assert r.json()["detail"].startswith("Redis is unavailable, retry later")
            ready = client.get("/health/ready")
            assert ready.status_code == 503 and ready.json()["redis"] is False
    finally:
        server.stop()
