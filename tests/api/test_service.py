"""GET /, health endpoints, /metrics and the OpenAPI document."""

from __future__ import annotations

import pytest
import redis
from fastapi.testclient import TestClient

from service import __version__
from service.api.app import create_app
from service.settings import Settings
from service.store.durability import read_durability


def test_info(client: TestClient) -> None:
    info = client.get("/").json()
    assert info["name"] == "omtl" and info["version"] == __version__
    assert info["models"] == ["default"] and info["default_model"] == "default"
    assert "cmtl" in info["learners"]


def test_live_ready_and_model_health(client: TestClient, rb: redis.Redis) -> None:
    assert client.get("/health/live").json() == {"status": "alive"}
    r = client.get("/health/ready")  # the process is ready without any worker
    assert r.status_code == 200 and r.json() == {
        "status": "ready",
        "redis": True,
        # what the test server runs with (the embedded one: everysec, see tests/conftest.py)
        "durability": read_durability(rb).as_dict(),
    }
    survives = r.json()["durability"]["acknowledged_writes_survive_a_server_crash"]
    gauge = {True: "1.0", False: "0.0", None: "-1.0"}[survives]
    assert f"omtl_redis_write_durability {gauge}" in client.get("/metrics").text
    h = client.get("/health/models")
    assert h.status_code == 503
    assert h.json()["unhealthy"] == ["default"]
    rb.set("omtl:{default}:heartbeat", "1", ex=5)
    h = client.get("/health/models")
    assert h.status_code == 200
    assert h.json()["models"] == {
        "default": {"healthy": True, "worker_heartbeat": True, "failure": None}
    }


def test_metrics_count_predictions_and_requests(client: TestClient) -> None:
    client.post("/predict", json={"task": "a", "x": [1, 2, 3]})
    client.post("/predict", json={"task": "a", "x": [1, 2]})
    text = client.get("/metrics").text
    assert 'omtl_predict_requests_total{model="default"}' in text
    assert 'omtl_predict_latency_seconds_count{model="default"}' in text
    assert 'omtl_http_requests_total{method="POST",route="/predict",status="200"}' in text
    assert 'omtl_http_requests_total{method="POST",route="/predict",status="422"}' in text


def test_openapi_documents_the_raw_bodies(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for name in ("PredictRequest", "PredictBatchRequest", "LabelRequest", "EventsRequest"):
        assert name in schemas
    body = doc["paths"]["/predict"]["post"]["requestBody"]["content"]["application/json"]
    refs = [s["$ref"] for s in body["schema"]["oneOf"]]
    assert refs == [
        "#/components/schemas/PredictRequest",
        "#/components/schemas/PredictBatchRequest",
    ]
    assert "x" in schemas["PredictRequest"]["properties"]
    assert client.get("/docs").status_code == 200


def test_an_invalid_default_model_does_not_stop_the_api(
    api_settings: Settings, rb: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    broken = api_settings.model_copy(update={"default_learner": "no-such-learner"})
    with TestClient(create_app(broken)) as client:
        assert client.get("/").json()["models"] == []
        assert client.get("/health/live").status_code == 200
    assert "cannot create the default model 'default'" in caplog.text
