"""``/models/{m}/relations`` and ``/models/{m}/tasks`` at scale: kind and meaning, task
subsets, top-k related tasks, the size bound, pagination, computation off the event loop."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

import learners
from service.api.services import modelling, relations
from service.store.models import ModelConfig, get_model, put_model
from service.store.snapshot import Snapshot, write_snapshot

GRAPH = np.array([[0, 1, 0, 0], [1, 0, 3, 0], [0, 3, 0, 0.5], [0, 0, 0.5, 0]], dtype=float)
NAMES = ["a", "b", "c", "d"]


def _publish(rb: redis.Redis, model: str, learner: learners.Learner, tasks: list[str]) -> None:
    """Write a snapshot of ``learner`` for ``model`` as the worker would."""
    cfg = get_model(rb, model)
    assert cfg is not None
    snap = Snapshot(
        version=0, generation=cfg.generation, learner=learner, task_names=tasks, last_id="5-0"
    )
    write_snapshot(rb, model, snap)


def _graph_model(client: TestClient, rb: redis.Redis) -> np.ndarray:
    assert client.put("/models/g", json={"learner": "cmtl", "n_features": 3}).status_code == 201
    learner = learners.make("cmtl", n_features=3, n_tasks=4, graph=GRAPH)
    _publish(rb, "g", learner, NAMES)
    return np.asarray(learner.relation_matrix())


def test_relations_say_what_the_matrix_is_per_learner(client: TestClient, rb: redis.Redis) -> None:
    cases = {"cmtl": "fixed-interaction", "omtl-logdet": "learned-interaction", "coml": "none"}
    for learner, kind in cases.items():
        body = {"learner": learner, "n_features": 3}
        assert client.put(f"/models/{learner}", json=body).status_code == 201
        _publish(rb, learner, learners.make(learner, n_features=3, n_tasks=2), ["x", "y"])
        rel = client.get(f"/models/{learner}/relations").json()
        assert rel["kind"] == kind
        assert rel["meaning"] == learners.get(learner).relation_meaning
        assert (rel["matrix"] is None) == (kind == "none")
    assert "not opposed" in client.get("/models/cmtl/relations").json()["meaning"]


def test_a_task_subset_is_the_submatrix_in_the_asked_order(
    client: TestClient, rb: redis.Redis
) -> None:
    full = _graph_model(client, rb)
    rel = client.get("/models/g/relations", params={"tasks": "c,a"}).json()
    assert rel["tasks"] == ["c", "a"] and rel["total_tasks"] == 4
    assert rel["matrix"] == full[np.ix_([2, 0], [2, 0])].tolist()
    whole = client.get("/models/g/relations").json()
    assert whole["matrix"] == full.tolist() and whole["tasks"] == NAMES


def test_top_k_ranks_other_tasks_by_interaction_magnitude(
    client: TestClient, rb: redis.Redis
) -> None:
    full = _graph_model(client, rb)
    rel = client.get("/models/g/relations", params={"top_k": 2, "matrix": "false"}).json()
    assert rel["matrix"] is None
    for i, name in enumerate(NAMES):
        others = [j for j in range(4) if j != i]
        best = sorted(others, key=lambda j: (-abs(full[i, j]), j))[:2]
        assert rel["top"][name] == [[NAMES[j], full[i, j]] for j in best]
    # b's strongest coupling is with c (edge weight 3), then a (weight 1)
    assert [t for t, _ in rel["top"]["b"]] == ["c", "a"]
    sub = client.get("/models/g/relations", params={"tasks": "d", "top_k": 1}).json()
    assert list(sub["top"]) == ["d"] and sub["top"]["d"][0][0] == "c"
    assert sub["matrix"] == [[full[3, 3]]]


def test_similarity_kinds_rank_by_value(client: TestClient, rb: redis.Redis) -> None:
    body = {"learner": "rom-pgd", "n_features": 3}
    assert client.put("/models/rom", json=body).status_code == 201
    learner = learners.make("rom-pgd", n_features=3, n_tasks=3, seed=1)
    rng = np.random.default_rng(0)
    for _ in range(200):
        t = int(rng.integers(3))
        x = rng.normal(size=3)
        learner.learn_one(x, 1 if (x[0] > 0) == (t != 2) else -1, t)
    _publish(rb, "rom", learner, ["p", "q", "r"])
    full = np.asarray(learner.relation_matrix())
    rel = client.get("/models/rom/relations", params={"top_k": 1}).json()
    assert rel["kind"] == "weight-similarity"
    for i, name in enumerate(["p", "q", "r"]):
        j = max((j for j in range(3) if j != i), key=lambda j: full[i, j])
        assert rel["top"][name][0][1] == pytest.approx(full[i, j])


def test_unknown_tasks_and_oversized_matrices_are_refused(
    client: TestClient, rb: redis.Redis
) -> None:
    _graph_model(client, rb)
    r = client.get("/models/g/relations", params={"tasks": "a,zz"})
    assert r.status_code == 404 and "'zz'" in r.json()["detail"]
    assert client.get("/models/g/relations", params={"top_k": 0}).status_code == 422
    k = relations.MAX_MATRIX_TASKS + 1
    names = [f"t{i}" for i in range(k)]
    assert client.put("/models/big", json={"learner": "ipl", "n_features": 2}).status_code == 201
    _publish(rb, "big", learners.make("ipl", n_features=2, n_tasks=k), names)
    r = client.get("/models/big/relations")
    assert r.status_code == 422 and "top_k" in r.json()["detail"]
    rel = client.get("/models/big/relations", params={"top_k": 3, "matrix": "false"}).json()
    assert len(rel["top"]) == k and rel["total_tasks"] == k
    # ipl's identity has no related task: the three "best" others all have value 0
    assert [v for _, v in rel["top"]["t7"]] == [0.0, 0.0, 0.0]
    sub = client.get("/models/big/relations", params={"tasks": "t1,t2"}).json()
    assert sub["matrix"] == [[1.0, 0.0], [0.0, 1.0]]


def test_relations_are_computed_off_the_event_loop(
    client: TestClient, rb: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    _graph_model(client, rb)
    seen: list[str] = []
    real = modelling.relations_body

    def recording(*args: object) -> dict[str, object]:
        seen.append(threading.current_thread().name)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(modelling, "relations_body", recording)
    assert client.get("/models/g/relations").status_code == 200
    loop_thread = client.portal.call(lambda: threading.current_thread().name)  # type: ignore[union-attr]
    assert seen and seen[0] != loop_thread


def test_tasks_are_paginated_with_the_total_in_a_header(
    client: TestClient, rb: redis.Redis
) -> None:
    assert client.put("/models/p", json={"learner": "ipl", "n_features": 2}).status_code == 201
    names = [f"task-{i}" for i in range(25)]
    _publish(rb, "p", learners.make("ipl", n_features=2, n_tasks=25), names)
    r = client.get("/models/p/tasks", params={"offset": 10, "limit": 5})
    assert r.status_code == 200 and r.headers["X-Total-Count"] == "25"
    assert [row["task"] for row in r.json()] == names[10:15]
    assert [row["task"] for row in client.get("/models/p/tasks").json()] == names
    tail = client.get("/models/p/tasks", params={"offset": 23, "limit": 100}).json()
    assert [row["task"] for row in tail] == names[23:]
    assert client.get("/models/p/tasks", params={"offset": 30}).json() == []
    assert client.get("/models/p/tasks", params={"limit": 0}).status_code == 422
    assert client.get("/models/p/tasks", params={"offset": -1}).status_code == 422


def test_top_k_of_a_model_without_tasks_is_empty(client: TestClient, rb: redis.Redis) -> None:
    """Found by fuzzing: top_k on a model that has seen no task yet answered 500."""
    put_model(rb, "fresh", ModelConfig(learner="cmtl", n_features=3))
    answer = client.get("/models/fresh/relations", params={"top_k": 1, "matrix": "false"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["tasks"] == [] and body["total_tasks"] == 0
    assert body["top"] == {}
