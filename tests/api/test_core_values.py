"""Values the log cannot hold are refused up front (422, nothing written), and regression
labels are kept and compared exactly (real app, real Redis, real worker)."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

from service.settings import Settings
from service.store import keys
from service.store.codec import Y32, Y64, decode_entry
from service.store.snapshot import read_snapshot
from service.worker import Worker

BIG = 1e39  # beyond float32 (3.4e38): it would be stored as infinity
REG = {"learner": "ella", "n_features": 3, "params": {"base_learner": "linear"}}


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/predict", {"task": "a", "x": [BIG, 0, 0]}),
        ("/predict", {"items": [{"task": "a", "x": [1, 0, 0]}, {"task": "a", "x": [0, -BIG, 0]}]}),
        ("/predict", {"task": "a", "x": {"indices": [1], "values": [BIG]}}),
        (
            "/events",
            {"events": [{"task": "a", "x": [1, 2, 3], "y": 1}, {"task": "a", "x": [1, BIG, 3]}]},
        ),
    ],
)
def test_features_beyond_float32_are_refused_whole(
    client: TestClient, rb: redis.Redis, path: str, body: dict[str, object]
) -> None:
    r = client.post(path, json=body)
    assert r.status_code == 422
    assert "float32" in r.json()["detail"]
    assert int(rb.xlen(keys.log_key("default"))) == 0


def test_the_largest_float32_values_are_accepted_and_applied(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    big = float(np.finfo(np.float32).max)
    r = client.post("/events", json={"events": [{"task": "a", "x": [big, -big, 0.0], "y": 1}]})
    assert r.status_code == 202
    result = Worker(api_settings, models=["default"]).run(until_idle=True, timeout=30)
    assert (result.events, result.dead_letters) == (1, 0)


def test_regression_labels_are_stored_and_compared_exactly(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    """123456789.123 and 123456789.5 are the same float32 but different labels: a batch
    keeps the exact value (y64), a second different label is 409 whatever the entry's
    encoding, the same one is a duplicate, and the worker learns the exact value."""
    assert client.put("/models/reg", json=REG).status_code == 201
    exact, other = 123456789.123, 123456789.5
    assert np.float32(exact) == np.float32(other)
    batch = client.post(
        "/events",
        json={
            "model": "reg",
            "events": [{"task": "t", "x": [1, 2, 3], "y": exact}, {"task": "t", "x": [3, 2, 1]}],
        },
    )
    assert batch.status_code == 202
    inline, unlabelled = batch.json()["event_ids"]
    single = client.post(
        "/events", json={"model": "reg", "events": [{"task": "t", "x": [1, 1, 1]}]}
    )
    (event_id,) = single.json()["event_ids"]
    for target in (inline, unlabelled, event_id):
        if target != inline:
            first = client.post("/label", json={"model": "reg", "event_id": target, "y": exact})
            assert first.json()["status"] == "accepted"
        again = client.post("/label", json={"model": "reg", "event_id": target, "y": exact})
        assert (again.status_code, again.json()["status"]) == (202, "duplicate")
        assert (
            client.post("/label", json={"model": "reg", "event_id": target, "y": other}).status_code
            == 409
        )
    (entry_id, fields), *_ = rb.xrange(keys.log_key("reg"), count=1)
    assert Y64.encode() in fields and Y32.encode() not in fields
    decoded = decode_entry(entry_id.decode(), fields, 3)
    assert decoded.y[0] == exact  # type: ignore[union-attr]
    result = Worker(api_settings, models=["reg"]).run(until_idle=True, timeout=30)
    assert result.dead_letters == 0
    snap = read_snapshot(rb, "reg")
    assert snap is not None and snap.totals["labels_applied"] == 2


def test_classification_batches_keep_the_compact_float32_labels(
    client: TestClient, rb: redis.Redis
) -> None:
    events = [{"task": "a", "x": [1, 2, 3], "y": 1}, {"task": "a", "x": [3, 2, 1], "y": -1}]
    assert client.post("/events", json={"events": events}).status_code == 202
    (_, fields), *_ = rb.xrange(keys.log_key("default"), count=1)
    assert Y32.encode() in fields and Y64.encode() not in fields
