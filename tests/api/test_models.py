"""/models: create, reconfigure, describe, delete; per-task statistics and the relation matrix."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

import learners
from service.store.models import get_model
from service.store.snapshot import Snapshot, write_snapshot


def test_put_creates_then_reconfigures(client: TestClient, rb: redis.Redis) -> None:
    spec = {"learner": "cmtl", "n_features": 4, "tasks": ["x", "y"], "params": {"b": 2.0}}
    created = client.put("/models/m1", json=spec)
    assert created.status_code == 201
    info = created.json()
    assert (info["learner"], info["n_features"], info["tasks"], info["generation"]) == (
        "cmtl",
        4,
        ["x", "y"],
        info["generation"],
    )
    first = info["generation"]
    assert info["params"] == {"b": 2.0}
    assert (info["version"], info["snapshot_age_seconds"]) == (0, None)
    same = client.put("/models/m1", json=spec)
    assert same.status_code == 200 and same.json()["generation"] == first
    client.post("/predict", json={"model": "m1", "task": "x", "x": [1, 2, 3, 4]})
    changed = client.put("/models/m1", json={**spec, "n_features": 2})
    assert changed.status_code == 200
    assert changed.json()["generation"] > first
    assert changed.json()["counts"]["log_entries"] == 0
    # The API validates against the new dimension at once.
    r = client.post("/predict", json={"model": "m1", "task": "x", "x": [1, 2, 3, 4]})
    assert r.status_code == 422
    assert (
        client.post("/predict", json={"model": "m1", "task": "x", "x": [1, 2]}).status_code == 200
    )


def test_list_get_delete(client: TestClient, rb: redis.Redis) -> None:
    client.put("/models/m2", json={"learner": "ipl", "n_features": 3})
    names = [m["name"] for m in client.get("/models").json()]
    assert names == ["default", "m2"]
    got = client.get("/models/m2").json()
    assert got["learner"] == "ipl" and got["kind"] == "classification"
    assert client.delete("/models/m2").status_code == 204
    assert client.get("/models/m2").status_code == 404
    assert rb.exists("omtl:{m2}:config") == 0
    r = client.post("/predict", json={"model": "m2", "task": "a", "x": [1, 2, 3]})
    assert r.status_code == 404
    assert rb.exists("omtl:{m2}:log") == 0


def _snapshot(rb: redis.Redis, model: str, learner: learners.Learner, tasks: list[str]) -> None:
    cfg = get_model(rb, model)
    assert cfg is not None
    counters = {
        "events": np.array([10, 4]),
        "labels": np.array([8, 0]),
        "mistakes": np.array([2, 0]),
        "queries": np.array([3, 1]),
        "predictions": np.array([10, 4]),
    }
    snap = Snapshot(
        version=0,
        generation=cfg.generation,
        learner=learner,
        task_names=tasks,
        counters=counters,
        last_id="5-0",
    )
    write_snapshot(rb, model, snap)


def test_tasks_and_relations_come_from_the_latest_snapshot(
    client: TestClient, rb: redis.Redis
) -> None:
    assert client.get("/models/default/tasks").json() == []
    learner = learners.make("cmtl", n_features=3, n_tasks=2)
    _snapshot(rb, "default", learner, ["spam", "ham"])
    tasks = client.get("/models/default/tasks").json()
    assert tasks[0] == {
        "task": "spam",
        "events": 10,
        "labels": 8,
        "mistakes": 2,
        "label_requests": 3,
        "predictions": 10,
        "online_accuracy": 0.75,
        "rmse": None,
        "mae": None,
        "outlier_score": None,
        "outlier": None,
    }
    assert tasks[1]["task"] == "ham" and tasks[1]["online_accuracy"] is None
    rel = client.get("/models/default/relations").json()
    assert rel["tasks"] == ["spam", "ham"] and rel["version"] == 1
    # cmtl's interaction matrix A^{-1} = (I + 11^T) / (K + 1) for K = 2 (Cavallanti et al. 2010).
    np.testing.assert_allclose(rel["matrix"], learner.relation_matrix())
    info = client.get("/models/default").json()
    assert info["version"] == 1 and info["last_applied_id"] == "5-0"
    assert info["counts"]["events"] == 14 and info["counts"]["queries"] == 4
    assert info["snapshot_age_seconds"] is not None and info["snapshot_age_seconds"] < 60


def test_outlier_fields_for_rom_learners(client: TestClient, rb: redis.Redis) -> None:
    client.put("/models/rom", json={"learner": "rom-pgd", "n_features": 3})
    learner = learners.make("rom-pgd", n_features=3, n_tasks=2)
    rng = np.random.default_rng(0)
    for _ in range(30):
        learner.learn_one(rng.normal(size=3), 1.0, 0)
        learner.learn_one(rng.normal(size=3), -1.0, 1)
    _snapshot(rb, "rom", learner, ["t0", "t1"])
    tasks = client.get("/models/rom/tasks").json()
    scores = learner.outlier_scores()  # type: ignore[attr-defined]
    flagged = set(learner.outlier_tasks())  # type: ignore[attr-defined]
    for i, row in enumerate(tasks):
        assert row["outlier_score"] == pytest.approx(scores[i])
        assert row["outlier"] == (i in flagged)
