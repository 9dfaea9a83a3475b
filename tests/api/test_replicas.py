"""Stateless API replicas: two app instances (each with its own caches and connections) on
the same Redis serve the same models; an event appended through one is labelled through the
other, and each replica's cache follows the snapshot version the worker writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.settings import Settings
from service.worker import Worker


@pytest.fixture
def replicas(api_settings: Settings, rb: redis.Redis) -> Iterator[tuple[TestClient, TestClient]]:
    """Two started apps on one flushed Redis."""
    with TestClient(create_app(api_settings)) as one, TestClient(create_app(api_settings)) as two:
        yield one, two


def _drain(settings: Settings, model: str) -> None:
    Worker(settings, models=[model]).run(until_idle=True, timeout=30)


def test_a_label_posted_to_one_replica_for_an_event_appended_through_the_other(
    replicas: tuple[TestClient, TestClient], api_settings: Settings
) -> None:
    a, b = replicas
    spec = {"learner": "cmtl", "n_features": 3, "tasks": ["spam", "ham"]}
    assert a.put("/models/rep", json=spec).status_code == 201
    assert b.get("/models/rep").json()["learner"] == "cmtl"  # created through a, seen by b
    x = [1.0, 0.5, 0.0]
    event = b.post("/predict", json={"model": "rep", "task": "ham", "x": x}).json()
    assert event["model_version"] == 0
    answer = a.post("/label", json={"model": "rep", "event_id": event["event_id"], "y": -1})
    assert answer.status_code == 202
    again = b.post("/label", json={"model": "rep", "event_id": event["event_id"], "y": -1})
    assert again.json()["status"] == "duplicate"  # the labels hash in Redis, not a replica
    _drain(api_settings, "rep")
    # both caches refresh to the new snapshot: cmtl, K = 2, w_ham = -2/3 x after the label
    for replica in (a, b):
        got = replica.post(
            "/predict", json={"model": "rep", "task": "ham", "x": x, "learn": False}
        ).json()
        assert got["model_version"] >= 1
        assert abs(got["score"] + 2 / 3 * 1.25) < 1e-6


def test_each_replica_cache_follows_the_snapshot_version(
    replicas: tuple[TestClient, TestClient], api_settings: Settings
) -> None:
    a, b = replicas
    spec = {"learner": "cmtl", "n_features": 2, "tasks": ["t"]}
    assert a.put("/models/ver", json=spec).status_code == 201
    probe = {"model": "ver", "task": "t", "x": [1.0, 0.0], "learn": False}
    first = a.post("/predict", json=probe).json()  # a caches version 0
    assert (first["model_version"], first["score"]) == (0, 0.0)
    events = [{"task": "t", "x": [1.0, 0.0], "y": y} for y in (-1, -1, -1)]
    sent = b.post("/events", json={"model": "ver", "events": events})
    assert sent.status_code == 202  # labelled events through the other replica
    _drain(api_settings, "ver")
    seen = {replica.post("/predict", json=probe).json()["model_version"] for replica in (a, b)}
    version = b.get("/models/ver").json()["version"]
    assert version >= 1
    assert seen == {version}
    scores = {replica.post("/predict", json=probe).json()["score"] for replica in (a, b)}
    assert len(scores) == 1 and scores != {0.0}
