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
        # JSON carries integers beyond int64: refused, not an overflow inside the app
        ({"task": "a", "x": {"indices": [2**63], "values": [1.0]}}, "indices must lie in"),
        ({"task": "a", "x": {"indices": [2**64 - 1], "values": [1.0]}}, "indices must lie in"),
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
        # ids Redis cannot take (numbers beyond 64 bits), and second spellings of an id
        # (leading zeros) that would pass a duplicate check keyed by the text
        ({"event_id": "18446744073709551616-0", "y": 1}, 422, "is not a stream id"),
        ({"event_id": "1-99999999999999999999", "y": 1}, 422, "is not a stream id"),
        ({"event_id": "18446744073709551615-0", "y": 1}, 404, "unknown or expired"),
        ({"event_id": "01-0", "y": 1}, 422, "event_id"),
        ({"event_id": "1-00", "y": 1}, 422, "event_id"),
        ({"event_id": "1-0/01", "y": 1}, 422, "event_id"),
        # a string or a boolean is not a number, whatever it spells
        ({"event_id": "1-0", "y": "1"}, 422, "y"),
        ({"event_id": "1-0", "y": True}, 422, "y"),
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


@pytest.mark.parametrize(
    ("path", "body", "loc"),
    [
        ("/predict", {"task": "a", "x": ["1", "2", "3"]}, "x"),
        ("/predict", {"task": "a", "x": [True, False, True]}, "x"),
        ("/predict", {"task": "a", "x": {"indices": [0, 1.0], "values": [1, 2]}}, "x"),
        ("/predict", {"task": "a", "x": GOOD_X, "learn": "yes"}, "learn"),
        ("/events", {"events": [{"task": "a", "x": GOOD_X, "y": "1"}]}, "y"),
        ("/events", {"events": [{"task": "a", "x": GOOD_X, "y": True}]}, "y"),
        ("/models/default/rollback", {"version": "1"}, "version"),
    ],
)
def test_values_of_the_wrong_type_are_not_converted(
    client: TestClient, rb: redis.Redis, path: str, body: dict[str, Any], loc: str
) -> None:
    """Request bodies are validated strictly: a string is not a number, a boolean not a
    number or an integer, a float not an index (an integer is a float)."""
    detail = _reject(client, rb, path, 422, json=body)
    assert any(loc in err["loc"] for err in detail), detail


@pytest.mark.parametrize("n_features", ["3", True, 3.0])
def test_a_model_whose_dimension_is_not_an_integer_is_refused(
    client: TestClient, n_features: Any
) -> None:
    r = client.put("/models/m", json={"learner": "cmtl", "n_features": n_features})
    assert r.status_code == 422
    assert client.get("/models/m").status_code == 404


@pytest.mark.parametrize(
    "query",
    ["start=18446744073709551616-0", "start=0-18446744073709551616", "start=01-0"],
)
def test_pending_requests_refuse_ids_redis_cannot_take(client: TestClient, query: str) -> None:
    r = client.get(f"/models/default/queries/pending?{query}")
    assert r.status_code == 422, r.text


def test_regression_targets_beyond_the_learners_bound_are_refused_whole(
    client: TestClient, rb: redis.Redis
) -> None:
    """ELLA takes targets of magnitude up to 1e50 (``max_target_magnitude``): a larger one
    is a 422 naming the bound, in a batch (which writes nothing, the valid rows neither)
    and as a label, instead of an entry the worker dead-letters whole."""
    body = {"learner": "ella", "n_features": 3, "params": {"base_learner": "linear"}}
    assert client.put("/models/reg", json=body).status_code == 201
    events = [{"task": "a", "x": GOOD_X, "y": 1.0}, {"task": "a", "x": GOOD_X, "y": 1e300}]
    r = client.post("/events", json={"model": "reg", "events": events})
    assert r.status_code == 422
    assert r.json()["detail"] == (
        "events[1].y must be at most 1e+50 in magnitude for the model 'reg' (learner ella), "
        "got 1e+300"
    )
    assert log_length(rb, "reg") == 0
    r = client.post("/events", json={"model": "reg", "events": [{"task": "a", "x": GOOD_X}]})
    (event_id,) = r.json()["event_ids"]
    r = client.post("/label", json={"model": "reg", "event_id": event_id, "y": -1e51})
    assert r.status_code == 422
    assert "y must be at most 1e+50 in magnitude" in r.json()["detail"]
    assert log_length(rb, "reg") == 1
    r = client.post("/label", json={"model": "reg", "event_id": event_id, "y": 1e50})
    assert r.status_code == 202


@pytest.mark.parametrize("tasks", [["a\nb"], ["x" * 201], [""], ["a", "b\x00"]])
def test_initial_task_names_no_event_could_name_are_refused(client: TestClient, tasks: Any) -> None:
    """An event's task is 1-200 characters without control characters: a model created
    with another name would hold a task no event can reach."""
    r = client.put("/models/m", json={"learner": "cmtl", "n_features": 3, "tasks": tasks})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"][:2] == ["body", "tasks"]
    assert client.get("/models/m").status_code == 404


@pytest.mark.parametrize("timeout", ["inf", "nan", "0", "-1"])
def test_a_label_request_stream_needs_a_finite_positive_timeout(
    client: TestClient, timeout: str
) -> None:
    """``timeout=inf`` would read as no limit; omitting the parameter says that."""
    r = client.get(f"/queries?timeout={timeout}")
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", "timeout"]


@pytest.mark.parametrize("learner", ["mmperc", "matrix-pnorm", "multiview-concat"])
def test_a_multiview_model_without_named_tasks_is_refused(client: TestClient, learner: str) -> None:
    """A round names its views by task, and only the creation names a multiview model's
    tasks: without them the model could never take a round."""
    r = client.put("/models/mv", json={"learner": learner, "n_features": 3})
    assert r.status_code == 422
    assert "give them in 'tasks'" in r.json()["detail"]
    assert client.get("/models/mv").status_code == 404
    r = client.put("/models/mv", json={"learner": learner, "n_features": 3, "tasks": ["a"]})
    assert r.status_code == 201
