"""POST /events: batches of labelled and unlabelled events become log entries."""

from __future__ import annotations

import numpy as np
import redis
from fastapi.testclient import TestClient

from service.store import keys
from service.store.codec import BatchEvent, Event, decode_entry


def _entries(rb: redis.Redis) -> list[Event | BatchEvent]:
    out = []
    for eid, fields in rb.xrange(keys.log_key("default")):
        entry = decode_entry(eid, fields, 3)
        assert isinstance(entry, Event | BatchEvent)
        out.append(entry)
    return out


def test_dense_events_become_one_batch_entry(client: TestClient, rb: redis.Redis) -> None:
    events = [
        {"task": "a", "x": [1, 2, 3], "y": 1, "ref": "r0"},
        {"task": "a", "x": [0, 1, 0]},
        {"task": "a", "x": [3, 2, 1], "y": -1},
    ]
    r = client.post("/events", json={"events": events})
    assert r.status_code == 202
    body = r.json()
    assert body["count"] == 3
    (batch,) = _entries(rb)
    assert isinstance(batch, BatchEvent)
    assert body["event_ids"] == [f"{batch.id}/{i}" for i in range(3)]
    assert batch.tasks == ["a", "a", "a"]
    assert batch.refs == ["r0", None, None]
    np.testing.assert_array_equal(batch.y, [1.0, np.nan, -1.0])
    np.testing.assert_array_equal(batch.X[2], [3, 2, 1])


def test_sparse_events_become_single_entries(client: TestClient, rb: redis.Redis) -> None:
    events = [
        {"task": "a", "x": {"indices": [1], "values": [4.0]}, "y": 1},
        {"task": "b", "x": [1, 1, 1], "ref": "r1"},
    ]
    body = client.post("/events", json={"events": events}).json()
    first, second = _entries(rb)
    assert body["event_ids"] == [first.id, second.id]
    assert isinstance(first, Event) and isinstance(second, Event)
    assert (first.task, first.y, second.task, second.y, second.ref) == ("a", 1.0, "b", None, "r1")


def test_single_event(client: TestClient, rb: redis.Redis) -> None:
    body = client.post("/events", json={"events": [{"task": "z", "x": [1, 2, 3], "y": -1}]}).json()
    (event,) = _entries(rb)
    assert isinstance(event, Event)
    assert body == {"count": 1, "event_ids": [event.id]}
    assert (event.task, event.y) == ("z", -1.0)
