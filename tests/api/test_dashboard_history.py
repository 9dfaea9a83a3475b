"""The history stream: written by the worker (at most once per interval, after
snapshots, only the tasks that changed), bounded, read by GET /models/{m}/history."""

from __future__ import annotations

import json
import math

import numpy as np
import redis
from fastapi.testclient import TestClient

from service.api.services.history import CurveSet
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_batch
from service.store.models import ModelConfig, ModelLimits, put_model
from service.worker.history import HistoryRecorder
from service.worker.owned import load_owned
from service.worker.worker import Worker


def _entries(rb: redis.Redis, model: str) -> list[dict[str, object]]:
    out = []
    for _, fields in rb.xrange(keys.history_key(model)):
        f = {k.decode(): v.decode() for k, v in fields.items()}
        out.append({**f, "totals": json.loads(f["totals"]), "tasks": json.loads(f["tasks"])})
    return out


def _labelled(rb: redis.Redis, model: str, tasks: list[str], seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(len(tasks), 3)).astype(np.float32)
    y = np.where(X[:, 0] >= 0, 1.0, -1.0)
    rb.xadd(keys.log_key(model), encode_batch(tasks, X, y=y))  # type: ignore[arg-type]


def test_the_worker_appends_one_entry_per_run_listing_only_the_tasks_that_changed(
    rb: redis.Redis, settings: Settings
) -> None:
    put_model(rb, "m", ModelConfig(learner="cmtl", n_features=3, tasks=["a", "b", "c"]))
    settings = settings.model_copy(update={"history_interval_s": 0.0})
    _labelled(rb, "m", ["a", "b", "c", "a"], 0)
    Worker(settings, models=["m"]).run(until_idle=True, timeout=30)
    _labelled(rb, "m", ["b", "b"], 1)
    Worker(settings, models=["m"]).run(until_idle=True, timeout=30)
    entries = _entries(rb, "m")
    assert len(entries) == 2
    first, second = entries
    assert first["tasks"]["names"] == ["a", "b", "c"]  # type: ignore[index]
    assert first["tasks"]["labels"] == [2, 1, 1]  # type: ignore[index]
    assert first["totals"]["labels"] == 4  # type: ignore[index]
    # the second worker run loaded the model afresh: its first entry lists every task
    assert second["tasks"]["labels"] == [2, 3, 1]  # type: ignore[index]
    assert int(second["version"]) > int(first["version"])  # type: ignore[call-overload]


def test_entries_wait_for_the_interval_and_list_only_changed_tasks(
    rb: redis.Redis, settings: Settings
) -> None:
    put_model(rb, "m", ModelConfig(learner="cmtl", n_features=3, tasks=["a", "b", "c"]))
    owned = load_owned(rb, "m", ModelLimits())
    assert owned is not None
    state = owned.state
    recorder = HistoryRecorder(interval_s=3600, maxlen=100)
    recorder.snapshotted(rb, state)  # the first entry is written at once
    state.single["labels"][1] += 2
    state.single["mistakes"][1] += 1
    recorder.snapshotted(rb, state)  # within the interval: due later
    recorder.tick(rb, {"m": owned})
    assert len(_entries(rb, "m")) == 1
    recorder.tick(rb, {"m": owned}, force=True)  # a clean stop writes what is due
    entries = _entries(rb, "m")
    assert len(entries) == 2
    assert entries[1]["tasks"] == {  # only task b moved
        "names": ["b"],
        "events": [0],
        "labels": [2],
        "mistakes": [1],
        "queries": [0],
        "predictions": [0],
    }
    recorder.tick(rb, {"m": owned}, force=True)  # nothing due: nothing written
    assert len(_entries(rb, "m")) == 2


def test_the_stream_is_bounded(rb: redis.Redis, settings: Settings) -> None:
    put_model(rb, "m", ModelConfig(learner="cmtl", n_features=3, tasks=["a"]))
    owned = load_owned(rb, "m", ModelLimits())
    assert owned is not None
    recorder = HistoryRecorder(interval_s=0, maxlen=10)
    for _ in range(400):
        owned.state.single["labels"][0] += 1
        recorder.snapshotted(rb, owned.state)
    # MAXLEN ~ trims whole stream nodes (100 entries by default)
    assert 10 <= rb.xlen(keys.history_key("m")) <= 110


def test_get_history_returns_the_current_generation_oldest_first(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    settings = api_settings.model_copy(update={"history_interval_s": 0.0})
    for seed in range(3):
        client.post(
            "/events",
            json={"events": [{"task": "t1", "x": [0.1, seed, 1.0], "y": 1.0}]},
        ).raise_for_status()
        Worker(settings, models=["default"]).run(until_idle=True, timeout=30)
    answer = client.get("/models/default/history")
    assert answer.status_code == 200
    body = answer.json()
    assert body["kind"] == "classification"
    versions = [e["version"] for e in body["entries"]]
    assert len(versions) == 3 and versions == sorted(versions)
    assert [e["totals"]["labels"] for e in body["entries"]] == [1, 2, 3]
    assert client.get("/models/default/history?limit=1").json()["entries"][0]["version"] == max(
        versions
    )
    assert client.get("/models/nope/history").status_code == 404
    assert client.get("/models/default/history?limit=0").status_code == 422
    # a reconfiguration starts a new history
    client.put("/models/default", json={"learner": "cmtl", "n_features": 4}).raise_for_status()
    assert client.get("/models/default/history").json()["entries"] == []


def _entry(names: list[str], labels: list[int], mistakes: list[int], **more: list[float]) -> dict:
    return {"tasks": {"names": names, "labels": labels, "mistakes": mistakes, **more}}


def test_curves_carry_tasks_forward_and_pool_all_tasks() -> None:
    entries = [
        _entry(["a", "b"], [10, 4], [5, 2]),
        _entry(["a"], [20], [6]),  # b unchanged
        _entry(["b"], [8], [2]),
    ]
    curves = CurveSet(entries, regression=False)
    assert curves.x == [14.0, 24.0, 28.0]
    series = {s.name: s for s in curves.series(5)}
    assert list(series["a"].xs) == [14.0, 24.0]
    assert list(series["a"].ys) == [0.5, 0.7]
    assert list(series["b"].ys) == [0.5, 0.75]
    # all tasks: 1 - (5+2)/14, 1 - (6+2)/24, 1 - (6+2)/28
    assert np.allclose(series["all tasks"].ys, [0.5, 1 - 8 / 24, 1 - 8 / 28])
    assert curves.top_tasks(1) == ["a"]


def test_regression_curves_are_rmse_from_squared_error_sums() -> None:
    entries = [
        _entry(["a"], [4], [0], squared_error=[16.0]),
        _entry(["a"], [8], [0], squared_error=[18.0]),
    ]
    curves = CurveSet(entries, regression=True)
    assert curves.y_label == "rMSE"
    overall, a = curves.series(3)
    assert overall.name == "all tasks"
    assert np.allclose(a.ys, [2.0, 1.5])
    # without error sums a regression model has no curve, rather than a wrong one
    bare = CurveSet([_entry(["a"], [4], [0])], regression=True)
    assert math.isnan(bare.value({"labels": 4.0}))
    assert bare.series(3) == []


def test_a_history_key_of_another_type_does_not_stop_the_worker(
    rb: redis.Redis, settings: Settings
) -> None:
    put_model(rb, "m", ModelConfig(learner="cmtl", n_features=3, tasks=["a"]))
    rb.set(keys.history_key("m"), "not a stream")
    _labelled(rb, "m", ["a", "a"], 0)
    _labelled(rb, "m", ["a"], 1)
    settings = settings.model_copy(
        update={"history_interval_s": 0.0, "snapshot_every_entries": 1, "read_count": 1}
    )
    result = Worker(settings, models=["m"], worker_id="w-hist").run(until_idle=True, timeout=30)
    assert result.events == 3 and result.snapshots >= 2
    assert rb.type(keys.history_key("m")) == b"string"
