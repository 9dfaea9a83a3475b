"""The full loop through the real app, a real Redis and the real worker (burst mode).

create model -> predict -> the worker emits a label request -> the annotator
reads it (SSE) and posts the label -> the worker applies it -> the snapshot
version advances -> the prediction changes.
"""

from __future__ import annotations

from typing import Any

import orjson
import redis
from fastapi.testclient import TestClient

from service.settings import Settings
from service.worker import Worker


def _drain(settings: Settings, model: str) -> None:
    """Run the worker until the model's log is fully applied (it snapshots on return)."""
    Worker(settings, models=[model]).run(until_idle=True, timeout=30)


def _label_requests(client: TestClient, model: str, limit: int) -> list[dict[str, Any]]:
    params = {"model": model, "after": "0-0", "limit": limit, "timeout": 10}
    text = client.get("/queries", params=params).text
    return [
        orjson.loads(line[len("data: ") :])
        for line in text.splitlines()
        if line.startswith("data: ")
    ]


def test_predict_label_request_label_new_version_new_prediction(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    spec = {"learner": "cmtl", "n_features": 3, "tasks": ["spam", "ham"]}
    assert client.put("/models/loop", json=spec).status_code == 201
    x = [1.0, 0.5, 0.0]
    first = client.post("/predict", json={"model": "loop", "task": "ham", "x": x, "ref": "r1"})
    first_body = first.json()
    assert (first_body["model_version"], first_body["score"], first_body["label"]) == (0, 0.0, 1.0)

    _drain(api_settings, "loop")
    (request,) = _label_requests(client, "loop", 1)
    assert request["event_id"] == first_body["event_id"]
    assert (request["task"], request["ref"], request["score"]) == ("ham", "r1", 0.0)
    version_after_event = client.get("/models/loop").json()["version"]
    assert version_after_event >= 1

    answer = client.post("/label", json={"model": "loop", "event_id": request["event_id"], "y": -1})
    assert answer.status_code == 202
    _drain(api_settings, "loop")

    second = client.post("/predict", json={"model": "loop", "task": "ham", "x": x}).json()
    assert second["model_version"] > version_after_event
    # cmtl, K = 2: a mistake on task "ham" adds y (A^{-1})_{j,ham} x with A^{-1} = (I + 11^T)/3,
    # so w_ham = -2/3 x and the score of x is -2/3 |x|^2 = -2/3 * 1.25.
    assert abs(second["score"] + 2 / 3 * 1.25) < 1e-6
    assert second["label"] == -1.0
    spam = client.post("/predict", json={"model": "loop", "task": "spam", "x": x}).json()
    assert abs(spam["score"] + 1 / 3 * 1.25) < 1e-6, "the label for ham also teaches spam"

    tasks = {t["task"]: t for t in client.get("/models/loop/tasks").json()}
    assert tasks["ham"]["labels"] == 1
    assert tasks["ham"]["label_requests"] == 1
    assert tasks["spam"]["labels"] == 0
    retry = client.post("/label", json={"model": "loop", "event_id": request["event_id"], "y": -1})
    assert retry.json()["status"] == "duplicate"
    _drain(api_settings, "loop")
    again = client.post("/predict", json={"model": "loop", "task": "ham", "x": x, "learn": False})
    assert abs(again.json()["score"] - second["score"]) < 1e-9, "a retried label is applied once"
