"""POST /label: accepted once, retries answered 202 and applied once, 409 and 404 paths."""

from __future__ import annotations

import redis
from fastapi.testclient import TestClient

from service.store import keys
from service.store.codec import Label, decode_entry
from tests.api.conftest import log_length


def _labels_in_log(rb: redis.Redis, model: str = "default") -> list[Label]:
    out = []
    for eid, fields in rb.xrange(keys.log_key(model)):
        entry = decode_entry(eid, fields)
        if isinstance(entry, Label):
            out.append(entry)
    return out


def _predict(client: TestClient, task: str = "a") -> str:
    event_id: str = client.post("/predict", json={"task": task, "x": [1, 0, 2]}).json()["event_id"]
    return event_id


def test_label_accepted_then_retry_is_applied_once(client: TestClient, rb: redis.Redis) -> None:
    event_id = _predict(client)
    body = {"event_id": event_id, "y": -1, "annotator": "ann-1"}
    first = client.post("/label", json=body)
    assert first.status_code == 202
    assert first.json() == {"status": "accepted", "event_id": event_id, "y": -1.0}
    retry = client.post("/label", json=body)
    assert retry.status_code == 202
    assert retry.json()["status"] == "duplicate"
    labels = _labels_in_log(rb)
    assert [(lb.event, lb.y, lb.annotator) for lb in labels] == [(event_id, -1.0, "ann-1")]
    assert rb.hget(keys.labels_key("default"), event_id) == b"-1"


def test_different_label_is_409(client: TestClient, rb: redis.Redis) -> None:
    event_id = _predict(client)
    assert client.post("/label", json={"event_id": event_id, "y": 1}).status_code == 202
    r = client.post("/label", json={"event_id": event_id, "y": -1})
    assert r.status_code == 409
    assert r.json()["detail"] == f"event '{event_id}' already has the label 1; refusing -1"
    assert len(_labels_in_log(rb)) == 1


def test_batch_rows_are_labelled_by_row_id(client: TestClient, rb: redis.Redis) -> None:
    items = [{"task": "a", "x": [1, 0, 0]}, {"task": "b", "x": [0, 1, 0]}]
    ids = [it["event_id"] for it in client.post("/predict", json={"items": items}).json()["items"]]
    entry = ids[0].split("/")[0]
    assert client.post("/label", json={"event_id": ids[1], "y": 1}).status_code == 202
    assert client.post("/label", json={"event_id": ids[0], "y": -1}).status_code == 202
    r = client.post("/label", json={"event_id": f"{entry}/2", "y": 1})
    assert r.status_code == 404 and "no such row in the batch" in r.json()["detail"]
    r = client.post("/label", json={"event_id": entry, "y": 1})
    assert r.status_code == 404 and "label one of its rows" in r.json()["detail"]
    assert [lb.event for lb in _labels_in_log(rb)] == [ids[1], ids[0]]


def test_row_id_of_a_single_event_and_label_entries_are_404(
    client: TestClient, rb: redis.Redis
) -> None:
    event_id = _predict(client)
    r = client.post("/label", json={"event_id": f"{event_id}/0", "y": 1})
    assert r.status_code == 404 and "not a batch entry" in r.json()["detail"]
    client.post("/label", json={"event_id": event_id, "y": 1})
    label_entry = rb.xrange(keys.log_key("default"))[-1][0].decode()
    r = client.post("/label", json={"event_id": label_entry, "y": 1})
    assert r.status_code == 404 and "not an event" in r.json()["detail"]


def test_events_labelled_on_arrival_keep_their_label(client: TestClient, rb: redis.Redis) -> None:
    single = client.post("/events", json={"events": [{"task": "a", "x": [1, 1, 1], "y": 1}]})
    (sid,) = single.json()["event_ids"]
    batch = {"events": [{"task": "a", "x": [1, 0, 0], "y": -1}, {"task": "b", "x": [0, 1, 0]}]}
    bid0, bid1 = client.post("/events", json=batch).json()["event_ids"]
    before = log_length(rb)
    assert client.post("/label", json={"event_id": sid, "y": 1}).json()["status"] == "duplicate"
    assert client.post("/label", json={"event_id": sid, "y": -1}).status_code == 409
    assert client.post("/label", json={"event_id": bid0, "y": -1}).json()["status"] == "duplicate"
    assert client.post("/label", json={"event_id": bid0, "y": 1}).status_code == 409
    assert log_length(rb) == before
    assert client.post("/label", json={"event_id": bid1, "y": 1}).json()["status"] == "accepted"


def test_trimmed_event_is_404(client: TestClient, rb: redis.Redis) -> None:
    event_id = _predict(client)
    rb.xdel(keys.log_key("default"), event_id)
    r = client.post("/label", json={"event_id": event_id, "y": 1})
    assert r.status_code == 404
    assert "unknown or expired" in r.json()["detail"]


def test_regression_model_accepts_real_labels(client: TestClient, rb: redis.Redis) -> None:
    spec = {"learner": "ella", "n_features": 3, "params": {"base_learner": "linear"}}
    assert client.put("/models/reg", json=spec).status_code == 201
    sent = client.post("/events", json={"model": "reg", "events": [{"task": "t", "x": [1, 2, 3]}]})
    (event_id,) = sent.json()["event_ids"]
    body = {"model": "reg", "event_id": event_id, "y": 0.37}
    assert client.post("/label", json=body).json()["status"] == "accepted"
    assert client.post("/label", json=body).json()["status"] == "duplicate"
    assert client.post("/label", json={**body, "y": 0.38}).status_code == 409
    labelled = client.post(
        "/events", json={"model": "reg", "events": [{"task": "t", "x": [1, 2, 3], "y": -2.5}]}
    )
    assert labelled.status_code == 202
    assert [lb.y for lb in _labels_in_log(rb, "reg")] == [0.37]
