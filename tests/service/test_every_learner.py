"""Every registered learner runs in the worker, and restarts from snapshots change nothing.

The same small log (labelled and unlabelled single events in both encodings, a
batch entry with unlabelled rows, labels for unlabelled events, a task that
appears late) is applied to two models of the same learner: once in one go,
and once in three parts with a new worker after each part, so that each part
starts from the snapshot the previous worker left. The two final states must
be identical: the learner's state_dict (generator included) survives the
snapshot exactly.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import redis

import learners
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_batch, encode_event, encode_label
from service.store.models import ModelConfig, put_model
from service.store.snapshot import read_snapshot
from service.worker import Worker

D = 4
PER_MS = 8  # entries per millisecond of the explicit ids


def _log() -> list[tuple[str, dict[str, bytes | str]]]:
    rng = np.random.default_rng(11)
    entries: list[tuple[str, dict[str, bytes | str]]] = []
    unlabelled: list[str] = []

    def add(fields: dict[str, bytes | str]) -> str:
        i = len(entries)
        entry_id = f"{i // PER_MS + 1}-{i % PER_MS}"
        entries.append((entry_id, fields))
        return entry_id

    for i in range(90):
        task = f"t{int(rng.integers(4 if i > 30 else 3))}"
        x = rng.normal(size=D)
        u = rng.random()
        if u < 0.6:
            add(encode_event(task, x, y=1 if x[0] > 0 else -1, binary=rng.random() < 0.7))
        elif u < 0.8:
            unlabelled.append(add(encode_event(task, x, binary=True, ref=f"r{i}")))
        elif u < 0.9 and unlabelled:
            add(encode_label(unlabelled.pop(0), 1 if rng.random() < 0.5 else -1))
        else:
            X = rng.normal(size=(5, D))
            e = add(encode_batch(["t0", "t1", "t2", "t0", "t1"], X, y=[1, -1, None, 1, None]))
            unlabelled += [f"{e}/2", f"{e}/4"]
    return entries


def _write(r: redis.Redis, model: str, part: list[tuple[str, dict[str, bytes | str]]]) -> None:
    with r.pipeline(transaction=False) as p:
        for entry_id, fields in part:
            p.xadd(keys.log_key(model), fields, id=entry_id)  # type: ignore[arg-type]
        p.execute()


@pytest.mark.parametrize("name", [info.name for info in learners.available()])
def test_learner_runs_in_the_worker_and_survives_restarts(
    name: str, rb: redis.Redis, settings: Settings
) -> None:
    info = learners.get(name)
    if info.kind == "regression":
        pytest.skip(f"{name} learns real targets; this log has classification labels")
    log = _log()
    config = ModelConfig(learner=name, n_features=D, tasks=["t0", "t1", "t2"], seed=3)
    for model in ("a", "b"):
        put_model(rb, model, config)
    _write(rb, "a", log)
    whole = Worker(settings, ["a"]).run(until_idle=True, timeout=60)
    assert whole.entries == len(log)
    assert whole.dead_letters == 0, rb.xrange(keys.dead_key("a"))
    cut = [0, 4 * PER_MS, 7 * PER_MS, len(log)]  # parts end on a millisecond boundary
    for start, end in itertools.pairwise(cut):
        _write(rb, "b", log[start:end])
        Worker(settings.model_copy(update={"read_count": 7}), ["b"]).run(
            until_idle=True, timeout=60
        )
    a, b = read_snapshot(rb, "a"), read_snapshot(rb, "b")
    assert a is not None
    assert b is not None
    assert a.last_id == b.last_id == log[-1][0]
    assert a.task_names == b.task_names == ["t0", "t1", "t2", "t3"]
    sa, sb = a.learner.state_dict(), b.learner.state_dict()
    assert sa.keys() == sb.keys()
    for key, value in sa.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, sb[key], err_msg=key)
        else:
            assert value == sb[key], key
    assert a.totals == b.totals
    assert _events(rb, "a") == _events(rb, "b")


def _events(r: redis.Redis, model: str) -> list[bytes]:
    return [f[b"event"] for _, f in r.xrange(keys.queries_key(model))]
