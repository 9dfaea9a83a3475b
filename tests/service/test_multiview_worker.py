"""Late labels of multiview rounds read back from the log by a new worker.

A worker applies unlabelled rounds and stops; the annotators' labels arrive
afterwards and a new worker (empty event cache) applies them: it reads each
round back from the log (``XRANGE``) and learns it exactly as the learner does
on the same rounds. A label naming a row of a round, a second label and a
label for an unknown entry are dead letters with the reason. A snapshot whose
view dimensions do not fit its arrays is refused before anything of their size
is allocated.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import redis

import learners
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_label, encode_multiview
from service.store.models import ModelConfig, put_model
from service.store.snapshot import Snapshot, SnapshotInvalid, decode, encode, read_snapshot
from service.worker import Worker

TASKS = ["u", "v"]
DIMS = [3, 2]


def test_late_labels_of_rounds_read_back_from_the_log(rb: redis.Redis, settings: Settings) -> None:
    put_model(
        rb,
        "m",
        ModelConfig(learner="mmperc", n_features=2, tasks=TASKS, params={"task_dims": [3]}),
    )
    rng = np.random.default_rng(4)
    rounds = []
    ids = []
    for i in range(12):
        views = {t: rng.integers(-4, 5, size=d) / 2.0 for t, d in zip(TASKS, DIMS, strict=True)}
        task = TASKS[i % 2]
        rounds.append((views, TASKS.index(task)))
        fields = encode_multiview(task, views, ref=f"q{i}", binary=i % 2 == 0)
        ids.append(rb.xadd(keys.log_key("m"), fields).decode())  # type: ignore[arg-type]
    first = Worker(settings, ["m"]).run(until_idle=True, timeout=30)
    assert first.label_requests == 12
    snap = read_snapshot(rb, "m")
    assert snap is not None
    assert int(snap.counters["labels"].sum()) == 0

    labels = [1.0 if i % 3 else -1.0 for i in range(12)]
    log = keys.log_key("m")
    for eid, y in zip(ids, labels, strict=True):
        rb.xadd(log, encode_label(eid, y))  # type: ignore[arg-type]
    rb.xadd(log, encode_label(ids[0], 1))  # type: ignore[arg-type]  # a second label
    rb.xadd(log, encode_label(f"{ids[1]}/0", 1))  # type: ignore[arg-type]  # not a batch
    second = Worker(settings, ["m"]).run(until_idle=True, timeout=30)
    assert second.labels_applied == 12
    assert second.dead_letters == 2
    reasons = [f[b"reason"].decode() for _, f in rb.xrange(keys.dead_key("m"))]
    assert "already has a label" in reasons[0]
    assert "is a multiview round, it has no row 0" in reasons[1]

    ref = learners.make("mmperc", n_features=2, n_tasks=2, task_dims=[3])
    mistakes = 0
    for (views, t), y in zip(rounds, labels, strict=True):
        s = ref.score_and_learn_views([views[name] for name in TASKS], y, t)
        mistakes += int((s >= 0) != (y > 0))
    snap = read_snapshot(rb, "m")
    assert snap is not None
    for key, value in ref.state_dict().items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(snap.learner.state_dict()[key], value, err_msg=key)
    assert int(snap.counters["labels"].sum()) == 12
    assert int(snap.counters["mistakes"].sum()) == mistakes


def test_a_snapshot_with_view_dimensions_its_arrays_do_not_fit_is_refused() -> None:
    learner = learners.make("mmperc", n_features=2, n_tasks=2, task_dims=[3])
    header, arrays = encode(Snapshot(version=1, generation=1, learner=learner, task_names=TASKS))
    assert decode(header, arrays).learner.view_dims == [3, 2]  # type: ignore[attr-defined]
    # the same archive with dims_ rewritten to 2**40: the learner's arrays do not fit them,
    # refused before anything of that size is allocated
    with np.load(io.BytesIO(arrays), allow_pickle=False) as npz:
        members = {k: npz[k] for k in npz.files}
    members["learner.state.dims_"] = np.array([2**40, 2], dtype=np.int64)
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **members)
    with pytest.raises(SnapshotInvalid, match="cannot reshape"):
        decode(header, buf.getvalue())
