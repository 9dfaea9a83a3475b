"""Model lifecycle through the HTTP API: incarnations, limits, failed models."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from service import metrics
from service.api.app import create_app
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event
from service.store.failures import read_failed
from service.store.models import ModelConfig, put_model
from service.worker import Worker


def test_delete_and_recreate_serves_the_new_incarnation(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    """The issue's reproduction: cmtl d = 3 with a snapshot, deleted, created again as
    ipl d = 2. The API predicts with the new learner at once, the worker applies
    every new event, nothing goes to the dead letters."""
    old = {"learner": "cmtl", "n_features": 3, "tasks": ["a", "b"]}
    assert client.put("/models/m", json=old).status_code == 201
    for _ in range(5):
        ok = client.post(
            "/events", json={"model": "m", "events": [{"task": "a", "x": [1, 2, 3], "y": -1}]}
        )
        assert ok.status_code == 202
    Worker(api_settings, ["m"]).run(until_idle=True, timeout=30)
    assert client.get("/models/m").json()["version"] >= 1
    assert client.post("/predict", json={"model": "m", "task": "a", "x": [1, 2, 3]}).json()[
        "score"
    ] != pytest.approx(0.0)
    assert client.delete("/models/m").status_code == 204
    assert client.put("/models/m", json={"learner": "ipl", "n_features": 2}).status_code == 201
    fresh = client.post("/predict", json={"model": "m", "task": "a", "x": [1, 2]})
    assert fresh.status_code == 200 and fresh.json()["score"] == 0.0  # an untrained ipl
    for _ in range(4):
        client.post("/events", json={"model": "m", "events": [{"task": "a", "x": [1, 2], "y": -1}]})
    Worker(api_settings, ["m"]).run(until_idle=True, timeout=30)
    info = client.get("/models/m").json()
    assert (info["learner"], info["n_features"], info["status"]) == ("ipl", 2, "ok")
    assert info["counts"]["events"] == 5 and info["counts"]["dead_letters"] == 0
    assert client.post("/predict", json={"model": "m", "task": "a", "x": [1, 2]}).status_code == 200


def test_a_model_over_the_memory_budget_is_refused_with_the_figure(
    api_settings: Settings, rb: redis.Redis
) -> None:
    with TestClient(create_app(api_settings.model_copy(update={"max_body_bytes": 2**20}))) as c:
        _refused(c)


def _refused(client: TestClient) -> None:
    big = client.put(
        "/models/big", json={"learner": "cmtl", "n_features": 10_000_000, "tasks": list("abcd")}
    )
    assert big.status_code == 422
    assert "needs about 762.9 MiB of state" in big.json()["detail"]
    assert "over the budget of 256.0 MiB per model (OMTL_MAX_MODEL_BYTES)" in big.json()["detail"]
    many = client.put(
        "/models/many",
        json={"learner": "omtl-logdet", "n_features": 2, "tasks": [f"t{i}" for i in range(10_000)]},
    )
    assert many.status_code == 422
    assert "10000 tasks is over the maximum of 1000 tasks" in many.json()["detail"]
    assert client.get("/models/big").status_code == 404
    assert client.get("/models/many").status_code == 404


@pytest.fixture
def small(api_settings: Settings, rb: redis.Redis) -> Iterator[TestClient]:
    """The app with at most 2 tasks per model."""
    with TestClient(create_app(api_settings.model_copy(update={"max_tasks": 2}))) as c:
        yield c


def test_a_task_beyond_the_maximum_is_refused_by_the_api_and_the_worker(
    small: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    spec = {"learner": "cmtl", "n_features": 2, "tasks": ["a", "b"]}
    assert small.put("/models/m", json=spec).status_code == 201
    third = small.post("/predict", json={"model": "m", "task": "c", "x": [1, 2]})
    assert third.status_code == 409
    assert "3 tasks is over the maximum of 2 tasks per model" in third.json()["detail"]
    assert small.post("/predict", json={"model": "m", "task": "b", "x": [1, 2]}).status_code == 200
    more = small.post("/events", json={"model": "m", "events": [{"task": "c", "x": [1, 2]}]})
    assert more.status_code == 409
    assert rb.xlen(keys.log_key("m")) == 1  # only the prediction for task b
    # a producer writing to the log directly: the worker dead-letters the event
    rb.xadd(keys.log_key("m"), encode_event("c", [1.0, 2.0], y=1, binary=True))
    Worker(api_settings.model_copy(update={"max_tasks": 2}), ["m"]).run(until_idle=True, timeout=30)
    dead = rb.xrange(keys.dead_key("m"))
    assert len(dead) == 1 and b"over the maximum of 2 tasks" in dead[0][1][b"reason"]
    assert small.get("/models/m").json()["tasks"] == ["a", "b"]


def test_a_failed_model_is_described_with_its_reason_and_others_serve(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    assert client.put("/models/bad", json={"learner": "cmtl", "n_features": 2}).status_code == 201
    rb.hset(keys.snapshot_key("bad"), mapping={"version": 1, "header": "[1]", "arrays": b""})
    Worker(api_settings, worker_id="w-api").run(until_idle=True, timeout=30)
    assert read_failed(rb, "bad") is not None
    info = client.get("/models/bad")
    assert info.status_code == 200
    body = info.json()
    assert (body["status"], body["learner"], body["n_features"]) == ("failed", "cmtl", 2)
    assert "JSON list, not an object" in body["failure"]
    predicted = client.post("/predict", json={"model": "bad", "task": "a", "x": [1, 2]})
    assert predicted.status_code == 503
    assert "model 'bad' is failed" in predicted.json()["detail"]
    assert client.post("/predict", json={"task": "a", "x": [1, 2, 3]}).status_code == 200
    listed = {m["name"]: m["status"] for m in client.get("/models").json()}
    assert listed == {"bad": "failed", "default": "ok"}


def test_deleting_a_model_removes_its_api_series(client: TestClient) -> None:
    client.put("/models/short", json={"learner": "ipl", "n_features": 2})
    client.post("/predict", json={"model": "short", "task": "a", "x": [1, 2]})
    assert metrics.model_series("short") >= 1
    assert client.delete("/models/short").status_code == 204
    assert metrics.model_series("short") == 0
    client.put("/models/short", json={"learner": "ipl", "n_features": 2})
    client.post("/predict", json={"model": "short", "task": "a", "x": [1, 2]})
    assert metrics.model_series("short") == 2  # the new incarnation is counted again


@pytest.mark.parametrize("field", ["generation", "learner", "n_features"])
def test_a_configuration_missing_a_field_is_described_as_failed(
    client: TestClient, rb: redis.Redis, field: str
) -> None:
    put_model(rb, "cfg", ModelConfig(learner="ipl", n_features=2))  # not seen by the API yet
    rb.hdel(keys.config_key("cfg"), field)
    body = client.get("/models/cfg").json()
    assert body["status"] == "failed"
    assert f"no field '{field}'" in body["failure"]
    assert (
        client.post("/predict", json={"model": "cfg", "task": "a", "x": [1, 2]}).status_code == 503
    )
