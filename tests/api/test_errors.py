"""Every rejected request answers a clear 4xx and writes nothing to the log."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from tests.api.conftest import log_length

GOOD_X = [1.0, 2.0, 3.0]


def _reject(client: TestClient, rb: redis.Redis, path: str, status: int, **kw: Any) -> Any:
    before = log_length(rb)
    r = client.post(path, **kw)
    assert r.status_code == status, r.text
    assert log_length(rb) == before, "a rejected request wrote to the log"
    return r.json()["detail"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"task": "a", "x": [1.0, 2.0]}, "x has dimension 2, expected 3"),
        ({"task": "a", "x": [1.0, 2.0, 3.0, 4.0]}, "x has dimension 4, expected 3"),
        ({"task": "a", "x": {"indices": [3], "values": [1.0]}}, "indices must lie in [0, 3)"),
        ({"task": "a", "x": {"indices": [0, 0], "values": [1, 2]}}, "indices must be unique"),
        ({"task": "a", "x": {"indices": [0, 1], "values": [1]}}, "2 indices but 1 values"),
        ({"items": [{"task": "a", "x": GOOD_X}, {"task": "b", "x": [1]}]}, "items[1].x has dim"),
    ],
)
def test_predict_wrong_dimension_or_sparse_shape(
    client: TestClient, rb: redis.Redis, body: dict[str, Any], needle: str
) -> None:
    assert needle in _reject(client, rb, "/predict", 422, json=body)


@pytest.mark.parametrize(
    ("raw", "loc"),
    [
        (b'{"task": "a", "x": [1, NaN, 3]}', "body"),
        (b'{"task": "a", "x": [1, Infinity, 3]}', "body"),
        (b'{"task": "a", "x": [1, 1e999, 3]}', "body"),
        (b'{"task": "a", "x": [1, "two", 3]}', "x"),
        (b'{"x": [1, 2, 3]}', "task"),
        (b'{"task": "", "x": [1, 2, 3]}', "task"),
        (b'{"task": "a", "x": [1, 2, 3], "colour": "red"}', "colour"),
        (b'{"task": "a", "x": [1, 2, 3], "learn": "maybe"}', "learn"),
        (b'{"items": []}', "items"),
        (b"[1, 2, 3]", "body"),
        (b"not json", "body"),
    ],
)
def test_predict_bad_body_is_422_with_location(
    client: TestClient, rb: redis.Redis, raw: bytes, loc: str
) -> None:
    detail = _reject(
        client, rb, "/predict", 422, content=raw, headers={"content-type": "application/json"}
    )
    assert any(loc in [str(p) for p in err["loc"]] for err in detail), detail


def test_unknown_model_is_404_everywhere(client: TestClient, rb: redis.Redis) -> None:
    x = {"model": "nope", "task": "a", "x": GOOD_X}
    assert _reject(client, rb, "/predict", 404, json=x) == "unknown model 'nope'"
    events = {"model": "nope", "events": [{"task": "a", "x": GOOD_X}]}
    assert _reject(client, rb, "/events", 404, json=events) == "unknown model 'nope'"
    label = {"model": "nope", "event_id": "1-0", "y": 1}
    assert _reject(client, rb, "/label", 404, json=label) == "unknown model 'nope'"
    for path in ("/models/nope", "/models/nope/tasks", "/models/nope/relations", "/queries"):
        r = client.get(path, params={"model": "nope"} if path == "/queries" else None)
        assert r.status_code == 404, path
        assert r.json()["detail"] == "unknown model 'nope'"
    assert client.delete("/models/nope").status_code == 404
    assert rb.exists("omtl:{nope}:log") == 0


def test_oversized_body_is_413_before_parsing(client: TestClient, rb: redis.Redis) -> None:
    big = b'{"task": "a", "x": [' + b"1.0, " * 20_000 + b"1.0]}"
    detail = _reject(
        client, rb, "/predict", 413, content=big, headers={"content-type": "application/json"}
    )
    assert detail == "request body larger than the limit of 65536 bytes"


def test_oversized_chunked_body_is_413(client: TestClient, rb: redis.Redis) -> None:
    def chunks() -> Any:
        yield b'{"task": "a", "x": ['
        for _ in range(2_000):
            yield b"1.0, " * 10
        yield b"1.0]}"

    detail = _reject(client, rb, "/events", 413, content=chunks())
    assert "larger than the limit of 65536 bytes" in detail


def test_too_many_items_is_413(client: TestClient, rb: redis.Redis) -> None:
    items = [{"task": "a", "x": GOOD_X}] * 51
    assert _reject(client, rb, "/predict", 413, json={"items": items}) == (
        "51 items in one request; the limit is 50"
    )
    events = {"events": [{"task": "a", "x": GOOD_X}] * 51}
    assert "the limit is 50" in _reject(client, rb, "/events", 413, json=events)


def test_events_all_or_nothing(client: TestClient, rb: redis.Redis) -> None:
    events = [{"task": "a", "x": GOOD_X, "y": 1}, {"task": "a", "x": GOOD_X, "y": 0.5}]
    detail = _reject(client, rb, "/events", 422, json={"events": events})
    assert detail == "events[1].y must be -1 or +1 for the classification model 'default', got 0.5"
    events = [{"task": "a", "x": GOOD_X}, {"task": "a", "x": GOOD_X[:2]}]
    assert "events[1].x has dimension 2" in _reject(
        client, rb, "/events", 422, json={"events": events}
    )


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"event_id": "1-0", "y": 0.5}, 422, "y must be -1 or +1 for the classification model"),
        ({"event_id": "1-0", "y": 0}, 422, "y must be -1 or +1"),
        ({"event_id": "not-an-id", "y": 1}, 422, "event_id"),
        ({"event_id": "1-0"}, 422, "y"),
        ({"event_id": "1-0", "y": "yes"}, 422, "y"),
        ({"event_id": "1-0", "y": 1}, 404, "unknown or expired"),
    ],
)
def test_label_bad_requests(
    client: TestClient, rb: redis.Redis, body: dict[str, Any], status: int, needle: str
) -> None:
    detail = _reject(client, rb, "/label", status, json=body)
    assert needle in str(detail)
    assert rb.hlen("omtl:{default}:labels") == 0


def test_bad_model_names_and_configs(client: TestClient, rb: redis.Redis) -> None:
    r = client.put("/models/bad{name}", json={"learner": "cmtl", "n_features": 3})
    assert r.status_code == 422
    r = client.put("/models/m", json={"learner": "no-such-learner", "n_features": 3})
    assert r.status_code == 422
    assert "unknown learner 'no-such-learner'" in r.json()["detail"]
    r = client.put("/models/m", json={"learner": "cmtl", "n_features": 0})
    assert r.status_code == 422
    r = client.put("/models/m", json={"learner": "cmtl", "n_features": 3, "params": {"b": -1}})
    assert r.status_code == 422
    assert "invalid value for parameter 'b'" in r.json()["detail"]
    assert client.get("/models/m").status_code == 404
