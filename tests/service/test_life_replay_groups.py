"""Replay with explicit entry ids: the groups of labelled events do not depend on
where the worker's reads happened to end (docs/architecture.md, "Applying log
entries"), so a replay from an older snapshot is bit-identical to the live run."""

from __future__ import annotations

import threading

import numpy as np
import redis

from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event
from service.store.models import ModelConfig, put_model
from service.store.snapshot import read_snapshot
from service.worker import Worker
from tests.service.helpers import wait_until


def _add(rb: redis.Redis, ms: int, seqs: range, rng: np.random.Generator) -> None:
    """Labelled events with explicit ids ``ms-seq``, added atomically (one read sees all)."""
    with rb.pipeline(transaction=True) as p:
        for seq in seqs:
            x = rng.normal(size=3).astype(np.float32)
            fields = encode_event(["a", "b"][seq % 2], x, y=1 if x[0] > 0 else -1, binary=True)
            p.xadd(keys.log_key("m"), fields, id=f"{ms}-{seq}")
        p.execute()


def _state(rb: redis.Redis) -> dict[str, object]:
    snap = read_snapshot(rb, "m")
    assert snap is not None
    return snap.learner.state_dict()


def test_same_millisecond_entries_after_a_read_boundary_replay_bit_identically(
    rb: redis.Redis, settings: Settings
) -> None:
    put_model(rb, "m", ModelConfig(learner="omtl-logdet", n_features=3, tasks=["a", "b"]))
    rng = np.random.default_rng(5)
    live = settings.model_copy(
        update={"snapshot_every_entries": 10_000, "snapshot_every_seconds": 600.0}
    )
    worker = Worker(live, ["m"], "w-live")
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()

    def applied(n: int) -> bool:
        owned = worker.owned.get("m")
        return owned is not None and owned.state.totals["entries"] == n

    try:
        for part in range(3):  # three reads, all entries within the same millisecond
            _add(rb, 1000, range(7 * part, 7 * part + 7), rng)
            assert wait_until(lambda p=part: applied(7 * p + 7), timeout=20)
    finally:
        worker.stop()
        thread.join(timeout=30)
    live_state = _state(rb)
    assert rb.smembers(keys.cuts_key("m")) == {b"1000-7", b"1000-14"}  # the two read boundaries
    rb.delete(keys.snapshot_key("m"))  # replay everything from the start, in one read
    Worker(settings, ["m"], "w-replay").run(until_idle=True, timeout=30)
    replayed = _state(rb)
    assert live_state.keys() == replayed.keys()
    for key, value in live_state.items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, replayed[key]), key  # bit for bit
        else:
            assert value == replayed[key], key
