"""POST /predict through the real app and Redis: answers, log entries, snapshot refresh."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

import learners
from service.store import keys
from service.store.codec import BatchEvent, Event, decode_entry
from service.store.models import get_model
from service.store.snapshot import Snapshot, write_snapshot
from tests.api.conftest import log_length


def _entry(rb: redis.Redis, entry_id: str) -> Event | BatchEvent:
    ((eid, fields),) = rb.xrange(keys.log_key("default"), entry_id, entry_id)
    decoded = decode_entry(eid, fields, 3)
    assert isinstance(decoded, Event | BatchEvent)
    return decoded


def _write_trained_snapshot(rb: redis.Redis, tasks: list[str]) -> learners.Learner:
    """A worker-like snapshot: cmtl trained on one example per task, version += 1."""
    cfg = get_model(rb, "default")
    assert cfg is not None
    learner = learners.make("cmtl", n_features=3, n_tasks=len(tasks))
    for t in range(len(tasks)):
        learner.learn_one(np.array([1.0, 0.0, 0.0]), -1.0, t)
    snap = Snapshot(version=0, generation=cfg.generation, learner=learner, task_names=tasks)
    write_snapshot(rb, "default", snap)
    return learner


def test_predict_appends_the_event_and_answers(client: TestClient, rb: redis.Redis) -> None:
    r = client.post("/predict", json={"task": "spam", "x": [0.5, -1, 2], "ref": "row-7"})
    assert r.status_code == 200
    body = r.json()
    # The initial cmtl has W = 0: score 0, and ties predict +1.
    assert body == {
        "event_id": body["event_id"],
        "label": 1.0,
        "score": 0.0,
        "model_version": 0,
        "task": "spam",
    }
    event = _entry(rb, body["event_id"])
    assert isinstance(event, Event)
    assert (event.task, event.y, event.ref) == ("spam", None, "row-7")
    np.testing.assert_array_equal(event.x, np.array([0.5, -1, 2], dtype=np.float32))


def test_learn_false_appends_nothing(client: TestClient, rb: redis.Redis) -> None:
    r = client.post("/predict", json={"task": "a", "x": [1, 2, 3], "learn": False})
    assert r.status_code == 200
    assert r.json()["event_id"] is None
    assert log_length(rb) == 0


def test_sparse_x_scores_like_the_dense_vector(client: TestClient, rb: redis.Redis) -> None:
    learner = _write_trained_snapshot(rb, ["a"])
    dense = client.post("/predict", json={"task": "a", "x": [2.0, 0, 0]}).json()
    sparse = client.post(
        "/predict", json={"task": "a", "x": {"indices": [0], "values": [2.0]}}
    ).json()
    expected = learner.decision_one(np.array([2.0, 0, 0]), 0)
    assert dense["score"] == pytest.approx(expected)
    assert sparse["score"] == pytest.approx(expected)
    assert expected < 0 and dense["label"] == sparse["label"] == -1.0
    event = _entry(rb, sparse["event_id"])
    assert isinstance(event, Event) and isinstance(event.x, tuple)


def test_new_snapshot_version_changes_the_prediction(client: TestClient, rb: redis.Redis) -> None:
    before = client.post("/predict", json={"task": "a", "x": [1, 0, 0]}).json()
    assert (before["model_version"], before["label"]) == (0, 1.0)
    learner = _write_trained_snapshot(rb, ["a", "b"])
    after = client.post("/predict", json={"task": "b", "x": [1, 0, 0]}).json()
    assert after["model_version"] == 1
    assert after["score"] == pytest.approx(learner.decision_one(np.array([1.0, 0, 0]), 1))
    assert after["label"] == -1.0


def test_batch_after_a_new_snapshot_uses_it(client: TestClient, rb: redis.Redis) -> None:
    """The scores computed with the cached view while the append is in flight are dropped
    when Redis reports a newer snapshot."""
    items = [{"task": "a", "x": [1, 0, 0]}, {"task": "b", "x": [1, 0, 0]}]
    before = client.post("/predict", json={"items": items}).json()
    assert [it["score"] for it in before["items"]] == [0.0, 0.0]
    learner = _write_trained_snapshot(rb, ["a", "b"])
    after = client.post("/predict", json={"items": items}).json()
    assert after["model_version"] == 1
    want = [learner.decision_one(np.array([1.0, 0, 0]), t) for t in (0, 1)]
    assert [it["score"] for it in after["items"]] == pytest.approx(want)
    assert all(it["model_version"] == 1 and it["label"] == -1.0 for it in after["items"])


def test_unseen_task_is_scored_as_a_fresh_task(client: TestClient, rb: redis.Redis) -> None:
    learner = _write_trained_snapshot(rb, ["a", "b"])
    got = client.post("/predict", json={"task": "new", "x": [1, 0, 0]}).json()
    fresh = learners.from_state_dict(learner.state_dict())
    k = fresh.add_task()
    assert got["score"] == pytest.approx(fresh.decision_one(np.array([1.0, 0, 0]), k))
    # cmtl shares mistakes across tasks, so a fresh task already leans negative.
    assert got["score"] < 0


def test_batch_of_dense_items_is_one_batch_entry(client: TestClient, rb: redis.Redis) -> None:
    items = [
        {"task": "a", "x": [1, 0, 0], "ref": "0"},
        {"task": "b", "x": [0, 1, 0]},
        {"task": "a", "x": [0, 0, 1], "ref": "2"},
    ]
    r = client.post("/predict", json={"items": items})
    assert r.status_code == 200
    body = r.json()
    ids = [it["event_id"] for it in body["items"]]
    entry = ids[0].split("/")[0]
    assert ids == [f"{entry}/0", f"{entry}/1", f"{entry}/2"]
    assert [it["task"] for it in body["items"]] == ["a", "b", "a"]
    assert log_length(rb) == 1
    batch = _entry(rb, entry)
    assert isinstance(batch, BatchEvent)
    assert batch.tasks == ["a", "b", "a"]
    assert batch.refs == ["0", None, "2"]
    assert np.isnan(batch.y).all()
    np.testing.assert_array_equal(batch.X, np.eye(3, dtype=np.float32))


def test_batch_with_sparse_items_appends_one_entry_each(
    client: TestClient, rb: redis.Redis
) -> None:
    items = [
        {"task": "a", "x": {"indices": [2], "values": [1.5]}},
        {"task": "b", "x": [1, 1, 1]},
    ]
    body = client.post("/predict", json={"items": items, "learn": True}).json()
    ids = [it["event_id"] for it in body["items"]]
    assert all("/" not in i for i in ids)
    assert log_length(rb) == 2
    first, second = (_entry(rb, i) for i in ids)
    assert isinstance(first, Event) and isinstance(second, Event)
    assert (first.task, second.task) == ("a", "b")
    idx, val = first.x
    assert idx.tolist() == [2] and val.tolist() == [1.5]


def test_batch_learn_false_writes_nothing(client: TestClient, rb: redis.Redis) -> None:
    items = [{"task": "a", "x": [1, 0, 0]}, {"task": "b", "x": [0, 1, 0]}]
    body = client.post("/predict", json={"items": items, "learn": False}).json()
    assert [it["event_id"] for it in body["items"]] == [None, None]
    assert log_length(rb) == 0


def test_regression_model_predicts_real_values(client: TestClient, rb: redis.Redis) -> None:
    spec = {"learner": "ella", "n_features": 2, "params": {"base_learner": "linear"}}
    r = client.put("/models/reg", json=spec)
    assert r.status_code == 201, r.text
    assert r.json()["kind"] == "regression"
    body = client.post("/predict", json={"model": "reg", "task": "t", "x": [1, 2]}).json()
    assert body["model_version"] == 0
    assert body["label"] == body["score"]
    assert log_length(rb, "reg") == 1
