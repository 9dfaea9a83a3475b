"""The worker reads a log of large batch entries a few entries at a time: a read brings
about ``READ_EVENTS`` events, not ``read_count`` entries of any size (500 entries of
10,000 events would be one reply of hundreds of megabytes)."""

from __future__ import annotations

import numpy as np
import pytest
import redis

from service.settings import Settings
from service.store import keys
from service.store.codec import encode_batch
from service.store.models import ModelConfig, put_model
from service.worker import Worker
from service.worker.worker import READ_EVENTS


def _fill(rb: redis.Redis, model: str, entries: int, rows: int) -> int:
    put_model(rb, model, ModelConfig(learner="cmtl", n_features=3, tasks=["a", "b"]))
    rng = np.random.default_rng(1)
    with rb.pipeline(transaction=False) as p:
        for _ in range(entries):
            X = rng.normal(size=(rows, 3))
            y = np.where(X[:, 0] > 0, 1.0, -1.0)
            p.xadd(keys.log_key(model), encode_batch(["a", "b"] * (rows // 2), X, y))  # type: ignore[arg-type]
        p.execute()
    return entries * rows


@pytest.mark.parametrize(
    ("rows", "entries_per_read"), [(10_000, READ_EVENTS // 10_000), (100, 500)]
)
def test_a_read_brings_about_read_events_events(
    rb: redis.Redis, settings: Settings, rows: int, entries_per_read: int
) -> None:
    events = _fill(rb, "m", 12, rows)
    worker = Worker(settings.model_copy(update={"read_count": 500}), models=["m"])
    result = worker.run(until_idle=True, timeout=120)
    assert (result.entries, result.events) == (12, events)
    assert worker.read_entries == entries_per_read
