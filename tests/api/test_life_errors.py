"""Error answers agree with the OpenAPI document; invalid UTF-8 is a 422 everywhere."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from service.api.openapi import ErrorBody, UnprocessableBody

BAD_UTF8 = b'{"task": "\xff", "x": [1, 2, 3]}'
WRITES = [("POST", "/predict"), ("POST", "/events"), ("POST", "/label"), ("PUT", "/models/m")]


@pytest.mark.parametrize(("method", "path"), WRITES)
def test_invalid_utf8_is_a_422_on_every_write(client: TestClient, method: str, path: str) -> None:
    r = client.request(method, path, content=BAD_UTF8, headers={"content-type": "application/json"})
    assert r.status_code == 422
    (issue,) = r.json()["detail"]
    assert issue["type"] == "json_invalid" and "UTF-8" in issue["msg"]


def test_every_documented_422_is_the_shape_answered(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    documented = 0
    for operations in doc["paths"].values():
        for operation in operations.values():
            answer = operation.get("responses", {}).get("422")
            if answer is not None:
                schema = answer["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/UnprocessableBody"}
                documented += 1
    assert documented >= 8
    detail = schemas["UnprocessableBody"]["properties"]["detail"]
    assert {"type": "string"} in detail["anyOf"]
    answers = [
        client.post("/predict", json={"task": 5, "x": [1, 2, 3]}),  # wrong type: a list
        client.post("/predict", json={"task": "a", "x": [1, 2]}),  # wrong dimension: a message
        client.put("/models/m", json={"learner": "nope", "n_features": 2}),
        client.put("/models/m", json={"learner": "cmtl", "n_features": 10_000_000, "tasks": ["a"]}),
        client.request("PUT", "/models/m", content=BAD_UTF8),
    ]
    kinds = set()
    for r in answers:
        assert r.status_code == 422, r.text
        body = UnprocessableBody.model_validate(r.json())
        kinds.add(type(body.detail).__name__)
    assert kinds == {"str", "list"}
    for r in (client.get("/models/nope"), client.delete("/models/nope")):
        assert r.status_code == 404
        ErrorBody.model_validate(r.json())
