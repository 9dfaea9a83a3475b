"""Snapshot history and rollback: the worker keeps earlier snapshots, a rollback restores
one bit for bit as a new generation under a running owner and discards the log after it,
and applying the same events again reaches the same state as before (deterministic)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event
from service.store.export import UnknownVersion, rollback_model, snapshot_versions
from service.store.models import ModelConfig, get_model, put_model
from service.store.snapshot import Snapshot, decode, read_snapshot
from service.worker import Worker
from tests.api import conftest as api_fixtures
from tests.service.helpers import wait_until

api_settings = api_fixtures.api_settings
client = api_fixtures.client

D = 3


def _events(rb: redis.Redis, seed: int, n: int = 30) -> None:
    """Labelled events (float32-exact features) appended to model m's log."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = (rng.integers(-8, 8, size=D) / 4).astype(np.float32)
        task = f"t{int(rng.integers(3))}"
        rb.xadd(keys.log_key("m"), encode_event(task, x, y=1 if x[0] + x[1] > 0 else -1))


def _state(snap: Snapshot) -> dict[str, Any]:
    return snap.learner.state_dict()


def _same_state(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for key, value in a.items():
        other = b[key]
        if isinstance(value, np.ndarray):
            if value.dtype != other.dtype or value.tobytes() != other.tobytes():
                return False
        elif value != other:
            return False
    return True


def _applied_all(rb: redis.Redis, generation: int) -> bool:
    snap = read_snapshot(rb, "m")
    last = rb.xrevrange(keys.log_key("m"), count=1)
    return (
        snap is not None
        and snap.generation == generation
        and bool(last)
        and snap.last_id == last[0][0].decode()
    )


@pytest.fixture
def keeping(settings: Settings) -> Settings:
    """Worker settings that keep every replaced snapshot (up to 4 in all)."""
    return settings.model_copy(update={"snapshot_keep": 4, "snapshot_keep_every_s": 0.0})


def test_rollback_under_a_running_worker_restores_and_replays_deterministically(
    rb: redis.Redis, keeping: Settings
) -> None:
    config = put_model(rb, "m", ModelConfig(learner="omtl-logdet", n_features=D, seed=3))
    worker = Worker(keeping, worker_id="w-rollback")
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    states: dict[int, dict[str, Any]] = {}
    try:
        for seed in (1, 2, 3):
            _events(rb, seed)
            assert wait_until(lambda: _applied_all(rb, config.generation), timeout=30)
            snap = read_snapshot(rb, "m")
            assert snap is not None
            states[snap.version] = _state(snap)
        versions = snapshot_versions(rb, "m")
        assert versions[0] == max(states) and len(versions) >= 3
        target = sorted(states)[-2]  # the state after the second batch of events
        assert target in versions

        previous = read_snapshot(rb, "m")
        assert previous is not None
        new_config, restored = rollback_model(rb, "m", target)
        assert new_config.generation > config.generation
        assert _same_state(_state(restored), states[target])
        # the log after the restored snapshot is gone, its position kept for new ids
        assert rb.xlen(keys.log_key("m")) == 0
        latest = read_snapshot(rb, "m")
        assert latest is not None and latest.generation == new_config.generation
        assert latest.version == previous.version + 1
        assert _same_state(_state(latest), states[target])

        # the owner reloads the restored state; the third batch again gives the same state
        _events(rb, 3)
        first_new = rb.xrange(keys.log_key("m"), count=1)[0][0].decode()
        assert tuple(map(int, first_new.split("-"))) > tuple(map(int, restored.last_id.split("-")))
        assert wait_until(lambda: _applied_all(rb, new_config.generation), timeout=30)
        replayed = read_snapshot(rb, "m")
        assert replayed is not None
        assert _same_state(_state(replayed), states[max(states)])
        assert rb.xlen(keys.dead_key("m")) == 0
    finally:
        worker.stop()
        thread.join(timeout=30)
    assert not thread.is_alive()


def test_history_is_bounded_and_unknown_versions_are_refused(
    rb: redis.Redis, keeping: Settings
) -> None:
    config = put_model(rb, "m", ModelConfig(learner="cmtl", n_features=D))
    for seed in range(6):
        _events(rb, seed, n=5)
        Worker(keeping, models=["m"]).run(until_idle=True, timeout=30)
    versions = snapshot_versions(rb, "m")
    assert versions == [6, 5, 4, 3]  # the latest and OMTL_SNAPSHOT_KEEP - 1 = 3 earlier
    history = rb.hgetall(keys.snapshot_history_key("m"))
    assert sorted(history) == sorted(
        f"{v}:{part}".encode() for v in (3, 4, 5) for part in ("header", "arrays")
    )
    kept = decode(history[b"3:header"], history[b"3:arrays"], 3)
    assert kept.generation == config.generation
    with pytest.raises(UnknownVersion, match="kept: 6, 5, 4, 3"):
        rollback_model(rb, "m", 2)
    assert get_model(rb, "m") == config  # nothing changed


def test_rollback_through_the_api(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    keep = api_settings.model_copy(update={"snapshot_keep": 3, "snapshot_keep_every_s": 0.0})
    assert client.put("/models/m", json={"learner": "ipl", "n_features": D}).status_code == 201
    for seed in (1, 2):
        _events(rb, seed, n=5)
        Worker(keep, models=["m"]).run(until_idle=True, timeout=30)
    listed = client.get("/models/m/snapshots").json()
    assert listed == {"model": "m", "versions": [2, 1]}
    before = client.get("/models/m").json()
    r = client.post("/models/m/rollback", json={"version": 1})
    assert r.status_code == 200, r.text
    after = r.json()
    assert after["version"] == 3 and after["generation"] > before["generation"]
    assert after["counts"]["events"] == 5 and before["counts"]["events"] == 10
    assert client.post("/models/m/rollback", json={"version": 99}).status_code == 404
    assert client.post("/models/m/rollback", json={"version": "x"}).status_code == 422
    assert client.post("/models/zz/rollback", json={"version": 1}).status_code == 404
