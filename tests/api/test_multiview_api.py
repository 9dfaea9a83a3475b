"""Multiview rounds through the API: PUT with per-task dimensions, the 422s, and
/events, /predict and /label through the real worker to the learner's state.

A model of a multiview learner (``mmperc`` with ``task_dims``) takes
``{"views": {task: x, ...}, "task": ...}``; every view is checked against its own
task's dimension, and the other form is refused for each kind of model. The
rounds the API appends, applied by the worker, give exactly the learner that
``score_and_learn_views`` gives on the same rounds in the same order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest
import redis
from fastapi.testclient import TestClient

import learners
from service.settings import Settings
from service.store.snapshot import read_snapshot
from service.worker import Worker
from tests.api.conftest import log_length
from tests.api.test_fastpath import _answer, routed_only

TASKS = ["a", "b", "c"]
DIMS = [2, 3, 4]  # task c gets n_features = 4
SPEC = {"learner": "mmperc", "params": {"task_dims": DIMS[:2], "b": 1.0}, "n_features": 4}


def _put(client: TestClient, name: str = "mv") -> dict[str, Any]:
    r = client.put(f"/models/{name}", json={**SPEC, "tasks": TASKS})
    assert r.status_code == 201, r.text
    return dict(r.json())


def _round(rng: np.random.Generator, sparse_b: bool = False) -> dict[str, Any]:
    views: dict[str, Any] = {t: rng.normal(size=d).round(3).tolist() for t, d in zip(TASKS, DIMS)}
    if sparse_b:
        views["b"] = {"indices": [2, 0], "values": [0.5, -1.25]}
    return views


def _dense(views: dict[str, Any], as_logged: bool = True) -> list[np.ndarray]:
    """The K instances of a round, as the log stores them (float32) or as sent."""
    out = []
    for t, d in zip(TASKS, DIMS, strict=True):
        v = views.get(t, [0.0] * d)
        if isinstance(v, dict):
            dense = np.zeros(d)
            dense[v["indices"]] = v["values"]
            v = dense
        arr = np.asarray(v, dtype=np.float64)
        out.append(arr.astype(np.float32).astype(np.float64) if as_logged else arr)
    return out


def test_put_takes_per_task_dimensions_and_shows_them(client: TestClient) -> None:
    info = _put(client)
    assert info["task_dims"] == {"a": 2, "b": 3, "c": 4}
    assert client.get("/models/mv").json()["task_dims"] == {"a": 2, "b": 3, "c": 4}
    assert client.get("/models/default").json()["task_dims"] is None  # cmtl: single events
    too_many = client.put(
        "/models/bad", json={**SPEC, "params": {"task_dims": [2, 3, 4]}, "tasks": ["a"]}
    )
    assert too_many.status_code == 422
    assert "task_dims gives 3 dimensions but 'tasks' names 1" in too_many.json()["detail"]
    zero = client.put("/models/bad", json={**SPEC, "params": {"task_dims": [0]}, "tasks": ["a"]})
    assert zero.status_code == 422
    assert "dimensions must be >= 1" in zero.json()["detail"]
    wrong_learner = client.put(
        "/models/bad", json={"learner": "cmtl", "n_features": 3, "params": {"task_dims": [2]}}
    )
    assert wrong_learner.status_code == 422
    assert "task_dims" in wrong_learner.json()["detail"]
    assert client.get("/models/bad").status_code == 404


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"task": "a", "views": {"a": [1, 2], "b": [1, 2]}},
            "views['b'] has dimension 2, expected 3",
        ),
        ({"task": "a", "views": {"a": [1, 2, 3]}}, "views['a'] has dimension 3, expected 2"),
        ({"task": "a", "views": {"a": [1, 2], "z": [1, 2, 3, 4]}}, "'z' is not a task of model"),
        ({"task": "c", "views": {"a": [1, 2]}}, "task 'c' must be one of the round's views"),
        (
            {"task": "b", "views": {"b": {"indices": [3], "values": [1.0]}}},
            "indices must lie in [0, 3)",
        ),
        ({"task": "a", "x": [1, 2, 3, 4]}, "takes multiview rounds"),
        ({"task": "a", "x": [1, 2], "views": {"a": [1, 2]}}, "exactly one of x"),
        ({"task": "a"}, "exactly one of x"),
        ({"task": "a", "views": {}}, "at least 1"),
    ],
)
def test_bad_rounds_are_422_with_the_reason_and_write_nothing(
    client: TestClient, rb: redis.Redis, body: dict[str, Any], message: str
) -> None:
    _put(client)
    for path, payload in (
        ("/predict", {**body, "model": "mv"}),
        ("/events", {"model": "mv", "events": [{**body, "y": 1}]}),
    ):
        r = client.post(path, json=payload)
        assert r.status_code == 422, (path, r.text)
        assert message in r.text, (path, r.text)
    assert log_length(rb, "mv") == 0


def test_a_round_sent_to_a_single_instance_model_is_422(
    client: TestClient, rb: redis.Redis
) -> None:
    body = {"task": "a", "views": {"a": [1, 2, 3]}}
    r = client.post("/predict", json=body)
    assert r.status_code == 422
    assert "takes single events" in r.json()["detail"]
    r = client.post("/events", json={"events": [{"task": "a", "x": [1, 2, 3]}, body]})
    assert r.status_code == 422
    assert "events[1] is a multiview round" in r.json()["detail"]
    assert log_length(rb) == 0


def test_rounds_through_the_worker_equal_the_learner_on_the_same_rounds(
    client: TestClient, settings: Settings, rb: redis.Redis
) -> None:
    _put(client)
    rng = np.random.default_rng(5)
    reference = learners.make("mmperc", n_features=4, n_tasks=3, task_dims=DIMS[:2], b=1.0)
    # labelled rounds through /events (some with a sparse view, some leaving a task out)
    events = []
    for i in range(30):
        views = _round(rng, sparse_b=i % 7 == 3)
        task = TASKS[i % 3]
        if i % 11 == 5:
            del views[TASKS[(i + 1) % 3]]
        y = 1.0 if sum(np.sum(v) for v in _dense(views)) > 0 else -1.0
        events.append({"task": task, "views": views, "y": y, "ref": f"r{i}"})
    r = client.post("/events", json={"model": "mv", "events": events})
    assert r.status_code == 202, r.text
    assert r.json()["count"] == 30
    expected_scores = []
    for e in events:
        expected_scores.append(
            reference.score_and_learn_views(_dense(e["views"]), e["y"], TASKS.index(e["task"]))
        )
    # an unlabelled round through /predict, then its label through /label
    views = _round(rng)
    p = client.post("/predict", json={"model": "mv", "task": "b", "views": views, "ref": "late"})
    assert p.status_code == 200, p.text
    event_id = p.json()["event_id"]
    assert "/" not in event_id  # one k=v entry per round
    lab = client.post("/label", json={"model": "mv", "event_id": event_id, "y": -1})
    assert lab.status_code == 202, lab.text
    assert lab.json()["status"] == "accepted"
    again = client.post("/label", json={"model": "mv", "event_id": event_id, "y": -1})
    assert again.json()["status"] == "duplicate"
    late_score = reference.score_and_learn_views(_dense(views), -1.0, 1)

    result = Worker(settings, ["mv"]).run(until_idle=True, timeout=60)
    assert result.entries == 32
    snap = read_snapshot(rb, "mv")
    assert snap is not None
    got, want = snap.learner.state_dict(), reference.state_dict()
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(got[key], value, err_msg=key)
        else:
            assert got[key] == value, key
    mistakes = sum(
        (s >= 0) != (e["y"] > 0) for s, e in zip(expected_scores, events, strict=True)
    ) + int(late_score >= 0)  # the late label is -1
    stats = {row["task"]: row for row in client.get("/models/mv/tasks").json()}
    assert sum(row["labels"] for row in stats.values()) == 31
    assert sum(row["mistakes"] for row in stats.values()) == mistakes
    assert stats["b"]["label_requests"] == 1  # a passive learner asks for every unlabelled round
    # predictions come from the snapshot: the reference learner's score of the views as sent
    probe = _round(rng)
    p = client.post("/predict", json={"model": "mv", "task": "c", "views": probe, "learn": False})
    assert p.status_code == 200
    assert p.json()["model_version"] == snap.version
    assert p.json()["score"] == pytest.approx(
        reference.decision_views(_dense(probe, False), 2), abs=1e-12
    )
    batch = client.post(
        "/predict",
        json={
            "model": "mv",
            "learn": False,
            "items": [{"task": "a", "views": probe}, {"task": "c", "views": probe}],
        },
    )
    assert batch.status_code == 200, batch.text
    assert [it["score"] for it in batch.json()["items"]] == [
        pytest.approx(reference.decision_views(_dense(probe, False), t), abs=1e-12) for t in (0, 2)
    ]


MV_BODIES = [
    {"model": "mv", "task": "a", "views": {"a": [1, 2], "b": [0, 1, 0], "c": [1, 1, 1, 1]}},
    {"model": "mv", "task": "b", "views": {"b": {"indices": [1], "values": [2.0]}}, "learn": False},
    {
        "model": "mv",
        "items": [
            {"task": "a", "views": {"a": [1, 2]}},
            {"task": "c", "views": {"c": [0, 0, 1, 0]}},
        ],
    },
    {"model": "mv", "task": "a", "views": {"a": [1, 2, 3]}},
    {"model": "mv", "task": "a", "x": [1, 2, 3, 4]},
    {"task": "a", "views": {"a": [1, 2, 3]}},
]


@pytest.mark.parametrize("body", MV_BODIES, ids=range(len(MV_BODIES)))
def test_the_fast_path_answers_rounds_as_the_route_does(
    client: TestClient, api_settings: Settings, rb: redis.Redis, body: dict[str, Any]
) -> None:
    _put(client)
    with TestClient(routed_only(api_settings)) as routed:
        start = log_length(rb, "mv")
        fast = _answer(client, orjson.dumps(body))
        middle = log_length(rb, "mv")
        slow = _answer(routed, orjson.dumps(body))
        assert fast == slow
        assert middle - start == log_length(rb, "mv") - middle


def test_openapi_documents_the_multiview_form(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for model in ("PredictRequest", "PredictItem", "EventIn"):
        props = schemas[model]["properties"]
        assert {"x", "views", "task"} <= set(props), model
        assert "multiview round" in props["views"]["description"]
    assert "task_dims" in schemas["ModelInfo"]["properties"]
