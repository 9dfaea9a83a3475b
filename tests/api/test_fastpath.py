"""The ASGI fast path of POST /predict answers exactly as the routed endpoint does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY
from starlette.routing import Router

from service.api.app import create_app
from service.api.fastpath import PredictFastPath
from service.api.routes import predict as predict_route
from service.settings import Settings
from tests.api.conftest import log_length

BODIES: list[bytes] = [
    b'{"task": "a", "x": [1, 2, 3]}',
    b'{"task": "a", "x": [1, 2, 3], "learn": false}',
    b'{"task": "a", "x": {"indices": [2], "values": [0.5]}, "ref": "r1"}',
    b'{"items": [{"task": "a", "x": [1, 2, 3]}, {"task": "b", "x": [0, 0, 1]}]}',
    b'{"task": "a", "x": [1, 2]}',
    b'{"task": "a", "x": [1, NaN, 3]}',
    b'{"task": "", "x": [1, 2, 3]}',
    b'{"task": "a", "x": [1, 2, 3], "colour": "red"}',
    b'{"model": "nope", "task": "a", "x": [1, 2, 3]}',
    b'{"items": []}',
    b"[1, 2, 3]",
    b"not json",
]


def routed_only(settings: Settings) -> FastAPI:
    """The same app with the fast path taken out: /predict goes through FastAPI's routing."""
    app = create_app(settings)
    app.user_middleware = [m for m in app.user_middleware if m.cls is not PredictFastPath]
    return app


@pytest.fixture
def routed(api_settings: Settings, rb: redis.Redis) -> Iterator[TestClient]:
    with TestClient(routed_only(api_settings)) as c:
        yield c


def _answer(client: TestClient, body: bytes) -> tuple[int, Any]:
    r = client.post("/predict", content=body, headers={"content-type": "application/json"})
    data = r.json()
    if isinstance(data, dict):
        data.pop("event_id", None)
        for item in data.get("items", []) if isinstance(data.get("items"), list) else []:
            item.pop("event_id", None)
    return r.status_code, data


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_fast_path_answers_as_the_route_does(
    client: TestClient, routed: TestClient, rb: redis.Redis, body: bytes
) -> None:
    start = log_length(rb)
    fast = _answer(client, body)
    middle = log_length(rb)
    slow = _answer(routed, body)
    assert fast == slow
    assert middle - start == log_length(rb) - middle  # the same entries appended (or none)


def test_fast_path_serves_predict(
    client: TestClient, rb: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FastAPI's router is not reached, and the request is counted under its route."""

    async def router_reached(self: Any, scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the router handled POST /predict")

    monkeypatch.setattr(Router, "__call__", router_reached)

    def count() -> float:
        value = REGISTRY.get_sample_value(
            "omtl_http_requests_total",
            {"method": "POST", "route": "/predict", "status": "200"},
        )
        return value or 0.0

    before = count()
    assert client.post("/predict", json={"task": "a", "x": [1, 2, 3]}).status_code == 200
    assert count() == before + 1
    assert log_length(rb) == 1


def test_the_fast_path_runs_the_routed_endpoint(client: TestClient) -> None:
    """One handler: the fast path calls the very function the router serves."""
    fast = next(
        m
        for m in client.app.user_middleware
        if m.cls is PredictFastPath  # type: ignore[attr-defined]
    )
    route = next(r for r in fast.kwargs["router"].routes if r.path == "/predict")
    assert route.endpoint is predict_route.predict
    assert PredictFastPath(client.app, **fast.kwargs).endpoint is predict_route.predict


def test_other_methods_and_paths_pass_through(client: TestClient) -> None:
    assert client.get("/predict").status_code == 405
    assert client.post("/predict/extra", json={}).status_code == 404
    assert client.get("/health/live").status_code == 200
