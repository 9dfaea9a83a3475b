"""Each creation of a model name is a new incarnation: nothing of a deleted model
(snapshot, state, label requests, metric series) reaches the next one
(docs/architecture.md, "Models and generations")."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import redis

from service import metrics
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event
from service.store.models import ModelConfig, delete_model, initial_snapshot, put_model
from service.store.snapshot import SnapshotFenced, read_snapshot, write_snapshot
from service.worker import Worker
from tests.service.helpers import wait_until


def test_a_snapshot_of_a_deleted_incarnation_is_refused(rb: redis.Redis) -> None:
    old = put_model(rb, "m", ModelConfig(learner="cmtl", n_features=3))
    stale = initial_snapshot("m", old)
    assert delete_model(rb, "m")
    with pytest.raises(SnapshotFenced, match="deleted"):
        write_snapshot(rb, "m", stale)
    assert rb.exists(keys.snapshot_key("m")) == 0  # nothing written for a deleted model
    new = put_model(rb, "m", ModelConfig(learner="ipl", n_features=2))
    assert new.generation > old.generation
    with pytest.raises(SnapshotFenced, match="generation"):
        write_snapshot(rb, "m", stale)
    assert read_snapshot(rb, "m") is None


def _labelled(rb: redis.Redis, d: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = rng.normal(size=d).astype(np.float32)
        rb.xadd(keys.log_key("m"), encode_event("a", x, y=1 if x[0] > 0 else -1, binary=True))


@pytest.mark.parametrize("trials", [4])
def test_delete_and_recreate_under_a_running_worker_starts_clean(
    trials: int, rb: redis.Redis, settings: Settings
) -> None:
    """The reproduction: delete and create again at once, with another learner and
    dimension, while a worker owns the model. Every event of the new incarnation
    is applied by its own learner; nothing is dead-lettered."""
    worker = Worker(settings, worker_id="w-incarnation")
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    shapes = [("cmtl", 3), ("ipl", 2)]
    try:
        for trial in range(trials):
            learner, d = shapes[trial % 2]
            cfg = put_model(rb, "m", ModelConfig(learner=learner, n_features=d, tasks=["a"]))
            _labelled(rb, d, 6, seed=trial)

            def applied(gen: int = cfg.generation) -> bool:
                snap = read_snapshot(rb, "m")
                return (
                    snap is not None
                    and snap.generation == gen
                    and int(snap.counters["events"].sum()) == 6
                )

            assert wait_until(applied, timeout=20), f"trial {trial}"
            snap = read_snapshot(rb, "m")
            assert snap is not None
            assert (snap.learner.name, snap.learner.n_features) == (learner, d)
            assert rb.xlen(keys.dead_key("m")) == 0, f"trial {trial}"
            rb.xadd(keys.queries_key("m"), {"event": "0-1", "task": "a"})
            assert delete_model(rb, "m")
    finally:
        worker.stop()
        thread.join(timeout=30)
    assert not thread.is_alive()


def test_the_series_of_a_deleted_model_are_removed(rb: redis.Redis, settings: Settings) -> None:
    put_model(rb, "gone", ModelConfig(learner="cmtl", n_features=2))
    _ = put_model(rb, "kept", ModelConfig(learner="cmtl", n_features=2))
    for name in ("gone", "kept"):
        rb.xadd(keys.log_key(name), encode_event("a", [1.0, 2.0], y=1, binary=True))
    worker = Worker(settings, worker_id="w-series")
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        # both models' series exist once each model's first event is applied
        assert wait_until(
            lambda: min(metrics.model_series(m) for m in ("gone", "kept")) >= 5, timeout=20
        )
        kept = metrics.model_series("kept")
        delete_model(rb, "gone")
        assert wait_until(lambda: metrics.model_series("gone") == 0, timeout=20)
        assert metrics.model_series("kept") >= kept
    finally:
        worker.stop()
        thread.join(timeout=30)
