"""The worker's read-ahead: while it applies a full read, the next one is already sent on
a connection of its own (docs/architecture.md, "The worker state machine"). It is used only when it
is the read the worker would send then, so the state, the label requests and the dead
letters are those of a worker that does not read ahead."""

from __future__ import annotations

from typing import Any

import numpy as np
import redis

from service.settings import Settings
from service.store import keys
from service.store.models import put_model
from service.store.snapshot import read_snapshot
from service.worker import Worker
from tests.service.helpers import assert_same_snapshot
from tests.service.test_crash_determinism import LEARNER, LogBuilder, _ids, write_log


def _counting_takes(worker: Worker) -> list[bool]:
    """Records, for every read sent ahead, whether the worker used it."""
    used: list[bool] = []
    real = worker._take_ahead

    def take(reading: Any) -> Any:
        pending = worker._ahead is not None
        found = real(reading)
        if pending:
            used.append(found is not None)
        return found

    worker._take_ahead = take  # type: ignore[method-assign]
    return used


def test_reading_ahead_changes_nothing(rb: redis.Redis, settings: Settings) -> None:
    builder = LogBuilder(seed=11, late_tasks_after=1_500)
    first = builder.extend(2_000, queried=[])
    put_model(rb, "probe", LEARNER)
    write_log(rb, "probe", first)
    Worker(settings, models=["probe"]).run(until_idle=True, timeout=120)
    log = builder.extend(4_000, queried=_ids(rb, keys.queries_key("probe"), b"event"))
    for model in ("ahead", "plain"):
        put_model(rb, model, LEARNER)
        write_log(rb, model, log)
    short = settings.model_copy(update={"read_count": 37})

    ahead = Worker(short, models=["ahead"])
    used = _counting_takes(ahead)
    assert ahead.run(until_idle=True, timeout=120).entries == len(log.entries)
    assert used.count(True) > 50  # most reads came ahead

    plain = Worker(short, models=["plain"])
    plain._read_ahead = False
    assert plain.run(until_idle=True, timeout=120).entries == len(log.entries)

    a, b = read_snapshot(rb, "ahead"), read_snapshot(rb, "plain")
    assert a is not None
    assert b is not None
    assert a.last_id == b.last_id == log.entries[-1][0]
    assert_same_snapshot(a, b)
    for key, field in ((keys.queries_key, b"event"), (keys.dead_key, b"entry")):
        assert _ids(rb, key("ahead"), field) == _ids(rb, key("plain"), field)
    assert sorted(_ids(rb, keys.dead_key("ahead"), b"entry")) == sorted(log.dead)


def test_a_read_ahead_for_a_model_reloaded_since_is_dropped(
    rb: redis.Redis, settings: Settings
) -> None:
    builder = LogBuilder(seed=12, late_tasks_after=10_000)
    log = builder.extend(600, queried=[])
    for model in ("m", "ref"):
        put_model(rb, model, LEARNER)
        write_log(rb, model, log)
    short = settings.model_copy(update={"read_count": 50, "snapshot_every_entries": 10**6})
    worker = Worker(short, models=["m"])
    used = _counting_takes(worker)
    worker._maintain()
    worker.read_entries = 50
    assert not worker._step(until_idle=True, block_ms=1)
    assert worker._ahead is not None  # a full read: the next one is on its way
    worker._drop("m", "test")  # reloaded below from the start of the log
    worker._maintain()
    assert worker.owned["m"].state.read_id != worker._ahead.logs[0][2]
    worker.run(until_idle=True, timeout=60)
    assert used[0] is False  # sent for the model's first load: not used
    assert any(used[1:])  # a later read ahead was used

    Worker(short, models=["ref"]).run(until_idle=True, timeout=60)
    a, b = read_snapshot(rb, "m"), read_snapshot(rb, "ref")
    assert a is not None
    assert b is not None
    assert_same_snapshot(a, b)
    assert np.array_equal(a.labelled, b.labelled)
