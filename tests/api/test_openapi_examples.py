"""Every request example of the OpenAPI document works as sent: posted to the real app
(with a worker, so the label example finds a pending label request) it answers 2xx."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest
import redis

from service.settings import Settings
from tests.browser.live import live_service
from tests.service.helpers import wait_until

pytestmark = pytest.mark.slow

#: Stands for the body of an operation that takes a file (``POST /models/import``): the
#: test sends the default model's export, as a user would upload the file they downloaded.
ZIP_BODY = object()

#: Operations sent first (they create what the others read) and last (they delete).
FIRST = [("post", "/predict"), ("post", "/events"), ("put", "/models/{model}")]
LAST = [("post", "/models/{model}/rollback"), ("delete", "/models/{model}")]


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    found = [(m, p, op) for p, ops in doc["paths"].items() for m, op in ops.items()]
    rank = {key: i for i, key in enumerate(FIRST)}
    found.sort(key=lambda t: (rank.get((t[0], t[1]), len(FIRST)), (t[0], t[1]) in LAST))
    return found


def _requests(path: str, op: dict[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
    """(url, query, body) for each body example of ``op`` (one request without a body)."""
    query = {}
    url = path
    for parameter in op.get("parameters", []):
        if parameter["in"] == "path":
            assert "example" in parameter, f"{path}: no example for {parameter['name']}"
            url = url.replace("{" + parameter["name"] + "}", str(parameter["example"]))
        elif parameter["in"] == "query" and "example" in parameter:
            query[parameter["name"]] = parameter["example"]
        else:
            assert not parameter.get("required"), f"{path}: no example for {parameter['name']}"
    body = op.get("requestBody")
    if body is None:
        return [(url, query, None)]
    if "application/zip" in body["content"]:  # a file: what GET /models/{m}/export gives
        return [(url, query, ZIP_BODY)]
    examples = body["content"]["application/json"].get("examples")
    assert examples, f"{path}: the request body has no example"
    return [(url, query, e["value"]) for e in examples.values()]


def test_every_openapi_example_answers_2xx_as_sent(settings: Settings, rb: redis.Redis) -> None:
    with live_service(settings) as live:
        http = live.http
        doc = http.get("/openapi.json").json()
        sent = 0
        labelled = None
        for method, path, op in _operations(doc):
            if (method, path) == ("get", "/health/models"):
                # healthy once the worker owns every model, the one PUT created included
                assert wait_until(lambda: http.get("/health/models").status_code == 200, 30, 0.1)
            if (method, path) == ("post", "/label"):
                # the document names the oldest pending label request once the worker has one
                assert wait_until(
                    lambda: http.get("/models/default/queries/pending").json()["requests"], 30
                )
                op = http.get("/openapi.json").json()["paths"]["/label"]["post"]
            if (method, path) == ("post", "/models/{model}/rollback"):
                # the document names the default model's newest kept snapshot
                assert wait_until(
                    lambda: http.get("/models/default/snapshots").json()["versions"], 30
                )
                op = http.get("/openapi.json").json()["paths"][path]["post"]
                newest = http.get("/models/default/snapshots").json()["versions"][0]
                examples = op["requestBody"]["content"]["application/json"]["examples"]
                assert [e["value"]["version"] for e in examples.values()] == [newest]
            for url, query, body in _requests(path, op):
                if body is ZIP_BODY:
                    exported = http.get("/models/default/export")
                    assert exported.status_code == 200
                    answer = http.request(
                        method.upper(), url, params=query, content=exported.content
                    )
                else:
                    answer = http.request(method.upper(), url, params=query, json=body)
                assert 200 <= answer.status_code < 300, (method, url, body, answer.text)
                if path == "/label":  # a real event, labelled for the first time
                    assert answer.json()["status"] == "accepted"
                    labelled = body["event_id"]
                sent += 1
        assert sent >= len(doc["paths"])
        pending = http.get("/models/default/queries/pending").json()["requests"]
        assert labelled not in [r["event_id"] for r in pending]


def test_the_predict_example_fits_the_default_model(settings: Settings, rb: redis.Redis) -> None:
    with live_service(settings) as live:
        doc = live.http.get("/openapi.json").json()
        content = doc["paths"]["/predict"]["post"]["requestBody"]["content"]["application/json"]
        first = next(iter(content["examples"].values()))["value"]
        assert len(first["x"]) == live.model()["n_features"]
        answer = live.http.post("/predict", json=first)
        assert answer.status_code == 200
        assert answer.json()["task"] == first["task"]
        docs = live.http.get("/docs").text
        assert "cdn" not in docs.lower() and "/static/docs/swagger-ui-bundle.js" in docs
        assert live.http.get("/static/docs/swagger-ui-bundle.js").status_code == 200
        assert httpx.get(live.base + "/redoc").status_code == 200
