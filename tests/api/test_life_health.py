"""Readiness is the process's (Redis answers); each model's health is reported apart."""

from __future__ import annotations

import redis
from fastapi.testclient import TestClient

from service.store import keys
from service.store.failures import mark_failed


def test_a_stuck_model_does_not_take_the_api_out_of_service(
    client: TestClient, rb: redis.Redis
) -> None:
    client.put("/models/stuck", json={"learner": "ipl", "n_features": 2})
    client.put("/models/broken", json={"learner": "ipl", "n_features": 2})
    rb.set(keys.heartbeat_key("default"), "1", ex=5)  # only the default model has a worker
    rb.set(keys.heartbeat_key("broken"), "1", ex=5)
    mark_failed(rb, "broken", "snapshot header is a JSON list, not an object", "w-1", 60)
    assert client.get("/health/ready").status_code == 200
    health = client.get("/health/models")
    assert health.status_code == 503
    body = health.json()
    assert body["unhealthy"] == ["broken", "stuck"]
    assert body["models"]["default"]["healthy"] is True
    assert body["models"]["stuck"] == {"healthy": False, "worker_heartbeat": False, "failure": None}
    assert body["models"]["broken"]["failure"] == "snapshot header is a JSON list, not an object"
    text = client.get("/metrics").text
    assert 'omtl_model_healthy{model="default"} 1.0' in text
    assert 'omtl_model_healthy{model="stuck"} 0.0' in text
    assert 'omtl_model_healthy{model="broken"} 0.0' in text
    # the predictions of healthy models go on
    assert client.post("/predict", json={"task": "a", "x": [1, 2, 3]}).status_code == 200
