"""The right figures per model kind: rMSE and MAE for regression models, label requests
counted as issued / answered / pending, applied by a real worker and read through the API."""

from __future__ import annotations

import math

import numpy as np
import redis
from fastapi.testclient import TestClient

import learners
from service.settings import Settings
from service.store.snapshot import read_snapshot
from service.worker import Worker

REG = {"learner": "ella", "n_features": 3, "params": {"base_learner": "linear"}, "seed": 4}


def test_regression_models_report_rmse_and_mae_not_accuracy(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    assert client.put("/models/reg", json=REG).status_code == 201
    rng = np.random.default_rng(3)
    X = rng.integers(-16, 16, size=(40, 3)) / 4.0  # exact in float32, as the log holds x
    tasks = ["u" if i % 3 else "v" for i in range(40)]
    y = (X @ np.array([2.0, -1.0, 0.5]) + 12.5).round(3)
    # half as one batch entry (the batch path), half as single events (the per-event path)
    batch = [{"task": t, "x": x.tolist(), "y": float(v)} for t, x, v in zip(tasks, X, y)][:20]
    assert client.post("/events", json={"model": "reg", "events": batch}).status_code == 202
    for i in range(20, 40):
        body = {"model": "reg", "events": [{"task": tasks[i], "x": X[i].tolist(), "y": y[i]}]}
        assert client.post("/events", json=body).status_code == 202
    Worker(api_settings, models=["reg"]).run(until_idle=True, timeout=30)

    # the same stream through the learner alone, rows 0..19 as one batch
    model = learners.make("ella", n_features=3, n_tasks=1, seed=4, base_learner="linear")
    names: list[str] = []
    for t in tasks:
        if t not in names:
            if len(names) >= model.n_tasks:
                model.add_task()
            names.append(t)
    index = np.array([names.index(t) for t in tasks])
    predictions = list(model.score_and_learn_many(X[:20], y[:20], index[:20]))
    predictions += [model.score_and_learn_one(X[i], y[i], int(index[i])) for i in range(20, 40)]
    errors = np.asarray(predictions) - y

    rows = {row["task"]: row for row in client.get("/models/reg/tasks").json()}
    for name in names:
        mine = index == names.index(name)
        row = rows[name]
        assert row["online_accuracy"] is None and row["mistakes"] == 0
        assert row["labels"] == int(mine.sum())
        assert math.isclose(row["rmse"], math.sqrt(np.mean(errors[mine] ** 2)), rel_tol=1e-9)
        assert math.isclose(row["mae"], np.mean(np.abs(errors[mine])), rel_tol=1e-9)
        assert row["rmse"] > 0.0


def test_label_requests_are_issued_answered_and_pending(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    # ipl is passive: the worker asks for the label of every unlabelled event
    assert client.put("/models/c", json={"learner": "ipl", "n_features": 3}).status_code == 201
    ids = [
        client.post("/predict", json={"model": "c", "task": "a", "x": [i, 1, 0]}).json()["event_id"]
        for i in range(5)
    ]
    labelled = client.post(
        "/events", json={"model": "c", "events": [{"task": "a", "x": [1, 1, 1], "y": 1}]}
    )
    assert labelled.status_code == 202
    Worker(api_settings, models=["c"]).run(until_idle=True, timeout=30)
    info = client.get("/models/c").json()
    assert info["label_requests"] == {"issued": 5, "answered": 0, "pending": 5}
    assert info["counts"]["label_requests_pending"] == 5

    for event_id, label in zip(ids[:2], (1, -1)):
        body = {"model": "c", "event_id": event_id, "y": label}
        assert client.post("/label", json=body).status_code == 202
    Worker(api_settings, models=["c"]).run(until_idle=True, timeout=30)
    info = client.get("/models/c").json()
    assert info["label_requests"] == {"issued": 5, "answered": 2, "pending": 3}
    assert info["counts"]["label_requests_pending"] == 3
    snap = read_snapshot(rb, "c")
    assert snap is not None
    assert sorted(map(tuple, snap.requested.tolist())) == sorted(
        (int(e.split("-")[0]), int(e.split("-")[1]), -1) for e in ids[2:]
    )
    # the stream of requests still holds all five (it is the delivery channel, not the count)
    assert rb.xlen("omtl:{c}:queries") == 5
