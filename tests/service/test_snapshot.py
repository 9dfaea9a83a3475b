"""Snapshots: round trip through a real Redis without pickle, versions, fencing."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import redis

import learners
from service.store import keys
from service.store.models import ModelConfig, initial_snapshot, put_model
from service.store.snapshot import (
    Snapshot,
    SnapshotFenced,
    decode,
    encode,
    read_snapshot,
    read_version,
    write_snapshot,
)


def _trained(name: str, **params: object) -> learners.Learner:
    rng = np.random.default_rng(3)
    model = learners.make(name, n_features=5, n_tasks=3, seed=11, **params)
    for _ in range(60):
        x = rng.normal(size=5)
        task = int(rng.integers(3))
        model.learn_one(x, 1.0 if x[0] + 0.1 * task > 0 else -1.0, task)
        model.query_one(x, task)
    return model


def _assert_same_state(a: learners.Learner, b: learners.Learner) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key, value in sa.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, sb[key], err_msg=key)
        else:
            assert value == sb[key], key


@pytest.mark.parametrize(
    "params", [{}, {"b": 0.0}, {"A": np.diag([2.0, 3.0, 4.0])}, {"append_bias": True}]
)
def test_encode_decode_round_trip_without_pickle(params: dict[str, object]) -> None:
    learner = _trained("cmtl", **params)
    snap = Snapshot(
        version=0,
        generation=4,
        learner=learner,
        task_names=["a", "b", "c"],
        last_id="17-2",
        created=123.5,
        counters={"events": np.array([5, 6, 7]), "labels": np.array([1, 2, 3])},
        model="m",
        totals={"entries": 18, "dead_letters": 1},
        labelled=np.array([[17, 0, -1], [16, 1, 4]]),
    )
    header, arrays = encode(snap)
    # the archive holds plain arrays only: loading it with pickle disabled works
    with np.load(io.BytesIO(arrays), allow_pickle=False) as npz:
        assert all(npz[k].dtype != object for k in npz.files)
    assert json.loads(header)["last_id"] == "17-2"
    back = decode(header, arrays, version=9)
    assert back.version == 9
    assert back.generation == 4
    assert back.task_names == ["a", "b", "c"]
    assert back.last_id == "17-2"
    assert back.created == 123.5
    assert back.totals == {"entries": 18, "dead_letters": 1}
    assert back.counters["events"].tolist() == [5, 6, 7]
    assert back.counters["mistakes"].tolist() == [0, 0, 0]
    assert back.labelled.tolist() == [[17, 0, -1], [16, 1, 4]]
    _assert_same_state(learner, back.learner)
    # the rebuilt generator continues the same random sequence
    assert back.learner.rng.random() == learner.rng.random()


def test_decode_rejects_a_pickled_archive() -> None:
    learner = _trained("ipl")
    header, _ = encode(Snapshot(0, 1, learner, ["a", "b", "c"]))
    buf = io.BytesIO()
    np.savez(buf, **{"learner.state.W_": np.array([{"evil": 1}], dtype=object)})
    with pytest.raises(ValueError, match="dtype object, not a number"):  # never unpickled
        decode(header, buf.getvalue())


def test_decode_rejects_foreign_format() -> None:
    with pytest.raises(ValueError, match="format"):
        decode(json.dumps({"format": 99}), b"")
    with pytest.raises(ValueError, match="not JSON"):
        decode(b"{", b"")


def test_write_read_and_version_increments(rb: redis.Redis) -> None:
    cfg = put_model(rb, "m", ModelConfig(learner="cmtl", n_features=5, tasks=["a", "b", "c"]))
    assert read_snapshot(rb, "m") is None
    assert read_version(rb, "m") is None
    snap = initial_snapshot("m", cfg)
    snap.learner = _trained("cmtl")
    snap.last_id = "5-0"
    assert write_snapshot(rb, "m", snap) == 1
    assert snap.version == 1
    snap.last_id = "6-0"
    assert write_snapshot(rb, "m", snap) == 2
    assert read_version(rb, "m") == 2
    back = read_snapshot(rb, "m")
    assert back is not None
    assert back.version == 2
    assert back.last_id == "6-0"
    assert back.generation == cfg.generation
    _assert_same_state(snap.learner, back.learner)
    assert set(rb.hkeys(keys.snapshot_key("m"))) == {b"version", b"header", b"arrays"}


def test_write_is_fenced_by_lease_and_generation(rb: redis.Redis) -> None:
    cfg = put_model(rb, "m", ModelConfig(learner="ipl", n_features=2))
    snap = initial_snapshot("m", cfg)
    rb.set(keys.lease_key("m"), "worker-a")
    assert write_snapshot(rb, "m", snap, owner="worker-a") == 1
    with pytest.raises(SnapshotFenced, match="lease"):
        write_snapshot(rb, "m", snap, owner="worker-b")
    put_model(rb, "m", ModelConfig(learner="ipl", n_features=3))  # reconfigured: generation 2
    with pytest.raises(SnapshotFenced, match="generation"):
        write_snapshot(rb, "m", snap, owner="worker-a")
    assert read_version(rb, "m") is None  # the reconfiguration cleared the old snapshot


def test_unknown_task_is_scored_in_a_fresh_slot_without_touching_the_snapshot() -> None:
    snap = Snapshot(0, 1, _trained("cmtl"), ["a", "b", "c"])
    before = snap.learner.state_dict()
    model, idx = snap.learner_for_task("new")
    assert model is not snap.learner
    assert idx == 3
    assert model.n_tasks == 4
    assert snap.learner.n_tasks == 3
    _assert_same_state(snap.learner, learners.from_state_dict(before))
    assert snap.learner_for_task("b") == (snap.learner, 1)
    empty = Snapshot(0, 1, learners.make("cmtl", n_features=5, n_tasks=1), [])
    assert empty.learner_for_task("first") == (empty.learner, 0)
