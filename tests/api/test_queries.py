"""GET /queries: label requests as server-sent events."""

from __future__ import annotations

from typing import Any

import orjson
import redis
from fastapi.testclient import TestClient

from service.store import keys


def _request(rb: redis.Redis, event: str, task: str, ref: str = "") -> str:
    fields = {"event": event, "task": task, "score": "0.25", "p": "0.8", "ref": ref, "ts": "1700"}
    return rb.xadd(keys.queries_key("default"), fields).decode()  # type: ignore[no-any-return]


def _messages(text: str) -> list[dict[str, Any]]:
    out = []
    for frame in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines() if not line.startswith(":"))
        if "data" in lines:
            out.append({"id": lines["id"], "event": lines["event"], **orjson.loads(lines["data"])})
    return out


def test_stream_from_the_start_with_a_limit(client: TestClient, rb: redis.Redis) -> None:
    first = _request(rb, "1-0", "a", "row-3")
    second = _request(rb, "2-0/4", "b")
    _request(rb, "3-0", "a")
    with client.stream("GET", "/queries", params={"after": "0-0", "limit": 2}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        text = r.read().decode()
    assert _messages(text) == [
        {
            "id": first,
            "event": "label_request",
            "model": "default",
            "event_id": "1-0",
            "task": "a",
            "score": 0.25,
            "p": 0.8,
            "ref": "row-3",
            "ts": 1700,
        },
        {
            "id": second,
            "event": "label_request",
            "model": "default",
            "event_id": "2-0/4",
            "task": "b",
            "score": 0.25,
            "p": 0.8,
            "ref": None,
            "ts": 1700,
        },
    ]


def test_resume_with_last_event_id(client: TestClient, rb: redis.Redis) -> None:
    first = _request(rb, "1-0", "a")
    _request(rb, "2-0", "a")
    r = client.get("/queries", params={"limit": 1}, headers={"Last-Event-ID": first})
    assert [m["event_id"] for m in _messages(r.text)] == ["2-0"]


def test_only_new_requests_by_default(client: TestClient, rb: redis.Redis) -> None:
    _request(rb, "1-0", "a")
    r = client.get("/queries", params={"timeout": 0.2})
    assert r.status_code == 200
    assert _messages(r.text) == []
    assert r.text.startswith(": label requests of model default")


def test_bad_parameters(client: TestClient) -> None:
    assert client.get("/queries", params={"after": "yesterday"}).status_code == 422
    assert client.get("/queries", params={"limit": 0}).status_code == 422
    assert client.get("/queries", params={"model": "a{b}"}).status_code == 422
