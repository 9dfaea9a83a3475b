"""The worker sizes each read by bytes: a read brings about ``READ_BYTES`` of entries per
log, starting from one entry until an entry's size is known, so a log of large entries
never comes back as one reply of hundreds of megabytes (docs/architecture.md, "The
worker state machine")."""

from __future__ import annotations

from typing import Any

import numpy as np
import redis

from service.settings import Settings
from service.store import keys
from service.store.codec import encode_batch
from service.store.models import ModelConfig, put_model
from service.worker import Worker
from service.worker.worker import READ_BYTES, READ_EVENTS

D = 4000
ROWS = 50


def _fill(rb: redis.Redis, model: str, entries: int) -> int:
    """``entries`` labelled batch entries of ``ROWS`` rows of ``D`` floats; their size each."""
    put_model(rb, model, ModelConfig(learner="cmtl", n_features=D, tasks=["a", "b"]))
    rng = np.random.default_rng(2)
    size = 0
    with rb.pipeline(transaction=False) as p:
        for _ in range(entries):
            X = rng.normal(size=(ROWS, D))
            y = np.where(X[:, 0] > 0, 1.0, -1.0)
            fields = encode_batch(["a", "b"] * (ROWS // 2), X, y)
            size = sum(len(k) + len(v) for k, v in fields.items())
            p.xadd(keys.log_key(model), fields)  # type: ignore[arg-type]
        p.execute()
    return size


def test_reads_are_sized_by_bytes(rb: redis.Redis, settings: Settings) -> None:
    size = _fill(rb, "big", 12)
    per_read = READ_BYTES // size
    assert 1 < per_read < READ_EVENTS // ROWS  # the bytes bound the read here, not the events
    counts: list[int] = []
    replies: list[int] = []
    worker = Worker(settings.model_copy(update={"read_count": 500}), models=["big"])
    real = worker._read

    def counting(reading: Any, count: int, block: int | None) -> Any:
        got, now_ms, generations, asked = real(reading, count, block)
        counts.append(asked)
        replies.append(sum(len(entries) for entries in got.values()))
        return got, now_ms, generations, asked

    worker._read = counting  # type: ignore[method-assign]
    result = worker.run(until_idle=True, timeout=120)
    assert (result.entries, result.events) == (12, 12 * ROWS)
    assert counts[0] == 1  # nothing known of the entries yet: one comes first
    assert set(counts[1:]) == {per_read}
    assert max(replies) == per_read
    assert sum(replies) == 12
    assert worker.read_entries == per_read


def test_small_entries_are_still_read_count_at_a_time(rb: redis.Redis, settings: Settings) -> None:
    put_model(rb, "small", ModelConfig(learner="cmtl", n_features=3, tasks=["a"]))
    with rb.pipeline(transaction=False) as p:
        for _ in range(30):
            p.xadd(keys.log_key("small"), encode_batch("a", np.ones((2, 3)), [1, -1]))  # type: ignore[arg-type]
        p.execute()
    worker = Worker(settings.model_copy(update={"read_count": 7}), models=["small"])
    result = worker.run(until_idle=True, timeout=60)
    assert (result.entries, result.events) == (30, 60)
    assert worker.read_entries == 7
