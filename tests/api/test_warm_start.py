"""Start-up makes sure the learner kernels are compiled: no /predict and no worker batch
compiles one (each loads from numba's cache at its first call)."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

import learners
from service.api.app import create_app
from service.settings import Settings
from service.store import keys
from service.store.models import ModelConfig, get_model, put_model
from service.store.snapshot import Snapshot, write_snapshot
from service.worker.__main__ import main as worker_main
from tests.learners.test_kernels import kernel_compiles


def _trained_snapshot(rb: redis.Redis, tasks: list[str]) -> None:
    cfg = get_model(rb, "default")
    assert cfg is not None
    learner = learners.make("cmtl", n_features=3, n_tasks=len(tasks))
    for t in range(len(tasks)):
        learner.learn_one(np.array([1.0, 0.0, 0.5]), -1.0, t)
    write_snapshot(rb, "default", Snapshot(0, cfg.generation, learner, tasks))


def _spy_on_load_kernels(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict]]:
    """The ``(learner, params)`` of every :func:`learners.load_kernels` call from now on."""
    calls: list[tuple[str, dict]] = []
    load = learners.load_kernels

    def spy(learner: str, params: dict | None = None) -> bool:
        calls.append((learner, dict(params or {})))
        return load(learner, params)

    monkeypatch.setattr(learners, "load_kernels", spy)
    return calls


def test_the_api_warms_the_kernels_before_it_serves(
    api_settings: Settings,
    rb: redis.Redis,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = create_app(api_settings)
    loads = _spy_on_load_kernels(monkeypatch)
    with caplog.at_level(logging.INFO, logger="omtl.api"), TestClient(app) as client:
        ready = [
            r.getMessage() for r in caplog.records if "learner kernels ready" in r.getMessage()
        ]
        # the default model exists before the kernels are loaded: its learner's are
        assert len(ready) == 1 and ready[0].endswith("loaded for cmtl)")
        assert loads == [("cmtl", {})]
        _trained_snapshot(rb, ["a", "b"])
        before = kernel_compiles()
        for x in ([2.0, 0.0, 1.0], [1.0, -2.0, 0.5], {"indices": [2], "values": [1.5]}):
            r = client.post("/predict", json={"task": "a", "x": x})
            assert r.status_code == 200
            assert r.json()["score"] != 0.0
        assert kernel_compiles() == before, "a /predict compiled a kernel"


def test_the_worker_warms_the_kernels_before_its_first_read(
    api_settings: Settings,
    rb: redis.Redis,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with TestClient(create_app(api_settings)) as client:
        rng = np.random.default_rng(0)
        events = [
            {"task": f"t{i % 3}", "x": rng.normal(size=3).tolist(), "y": 1 if i % 2 else -1}
            for i in range(40)
        ]
        assert client.post("/events", json={"events": events}).status_code == 202
        assert client.post("/events", json={"events": events[:1]}).status_code == 202
    monkeypatch.setenv("REDIS_URL", str(api_settings.redis_url))
    monkeypatch.setenv("OMTL_DATA_DIR", str(api_settings.data_dir))
    learners.ensure_kernels()  # what the worker's start-up does, measured from here on
    before = kernel_compiles()
    loads = _spy_on_load_kernels(monkeypatch)
    with caplog.at_level(logging.INFO, logger="omtl.worker"):
        assert worker_main(["--until-idle", "--timeout", "60", "--metrics-port", "0"]) == 0
    assert any("learner kernels ready" in r.getMessage() for r in caplog.records)
    assert kernel_compiles() == before, "a worker batch compiled a kernel"
    # the worker loaded the kernels of the model's learner as it took the model
    assert loads == [("cmtl", learners.make("cmtl", n_features=3, n_tasks=1).hyper)]
    assert json.loads(capsys.readouterr().out)["events"] == 41


def test_the_api_starts_next_to_models_it_cannot_read(
    api_settings: Settings,
    rb: redis.Redis,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Configurations written straight into Redis (no learner field, not a hash, over the
    limits) are left to the model's own reads: the API still starts, loads the kernels of
    the models it can read and serves them."""
    for name in ("nolearner", "nothash", "huge"):
        put_model(rb, name, ModelConfig(learner="ipl", n_features=2))
    rb.hdel(keys.config_key("nolearner"), "learner")
    rb.delete(keys.config_key("nothash"))
    rb.set(keys.config_key("nothash"), "oops")
    rb.hset(keys.config_key("huge"), "n_features", str(10**9))
    loads = _spy_on_load_kernels(monkeypatch)
    app = create_app(api_settings)
    with caplog.at_level(logging.INFO, logger="omtl.api"), TestClient(app) as client:
        skipped = {
            r.getMessage().split("'")[1]
            for r in caplog.records
            if "kernels not loaded ahead" in r.getMessage()
        }
        assert skipped == {"nolearner", "nothash", "huge"}
        assert loads == [("cmtl", {})]  # the default model
        answer = client.post("/predict", json={"task": "a", "x": [1.0, 0.0, 2.0]})
        assert answer.status_code == 200
        assert (
            client.post("/predict", json={"model": "huge", "task": "a", "x": [1.0]}).status_code
            >= 400
        )
