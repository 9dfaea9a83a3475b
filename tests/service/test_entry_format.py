"""The codec is the one reader and writer of log entries.

Every kind of entry the encoders write (single events as JSON or binary,
dense or sparse, with or without y and ref; batches with one task or a task
per row; labels of events and of batch rows) goes through the real worker
and gives the same model as the same stream written in the plainest form.
The worker's fast single-event reader and the label script read what the
encoders write: an encoder change they do not follow fails here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import redis

import learners
from service.settings import Settings
from service.store import codec, keys
from service.store.codec import (
    Event,
    decode_flat,
    encode_batch,
    encode_event,
    encode_label,
    encode_multiview,
    read_binary_event,
)
from service.store.models import ModelConfig, put_model
from service.store.scripts import APPEND_LABEL
from service.store.snapshot import read_snapshot
from service.worker import Worker

D = 4


def _flat(fields: dict[str, bytes | str]) -> list[bytes]:
    out: list[bytes] = []
    for k, v in fields.items():
        out += [k.encode(), v if isinstance(v, bytes) else v.encode()]
    return out


@pytest.mark.parametrize("y", [None, 1.0, -1.0, 0.25])
@pytest.mark.parametrize("ref", [None, "doc-7"])
def test_the_fast_reader_reads_what_the_binary_encoder_writes(
    y: float | None, ref: str | None
) -> None:
    x = np.array([0.5, -1.25, 2.0, 0.0])
    flat = _flat(encode_event("a", x, y=y, ref=ref, binary=True))
    fast = read_binary_event(flat, 4 * D)
    assert fast is not None, "encode_event(binary=True) no longer matches read_binary_event"
    full = decode_flat("1-0", flat, n_features=D)
    assert isinstance(full, Event)
    task, x32, fast_y, fast_ref = fast
    assert task.decode() == full.task == "a"
    np.testing.assert_array_equal(np.frombuffer(x32, "<f4"), full.x)
    assert fast_y == full.y == y
    assert (None if fast_ref is None else fast_ref.decode()) == full.ref == ref


@pytest.mark.parametrize(
    "fields",
    [
        encode_event("a", [0.5, 1.0, 0.0, 2.0], y=1),  # JSON
        encode_event("a", ([0, 3], [0.5, 2.0]), y=1, binary=True),  # sparse binary
        encode_event("a", [0.5, 1.0, 0.0, 2.0], y=1, binary=True) | {"extra": "1"},
        encode_batch("a", np.ones((2, D))),
        encode_label("1-0", 1),
        encode_multiview("a", {"a": [0.5, 1.0, 0.0, 2.0]}, y=1, binary=True),
    ],
)
def test_the_fast_reader_leaves_every_other_entry_to_the_decoder(
    fields: dict[str, bytes | str],
) -> None:
    flat = _flat(fields)
    assert read_binary_event(flat, 4 * D) is None
    decode_flat("2-0", flat, n_features=D)  # and the full decoder reads it


# ------------------------------------------------------------------ through the worker
@dataclass
class _Row:
    task: str
    x: np.ndarray
    y: float | None
    ref: str | None
    sparse: bool = False


def _x(rng: np.random.Generator) -> np.ndarray:
    # multiples of 1/8: exact in float32, so every encoding carries the same numbers
    return rng.integers(-16, 17, size=D) / 8.0


def _stream() -> list[tuple[str, Any]]:
    """A logical stream with one of every entry kind and encoding."""
    rng = np.random.default_rng(3)
    items: list[tuple[str, Any]] = []
    for i in range(6):  # labelled binary events in one millisecond: the grouped fast path
        items.append(("bin", _Row("ab"[i % 2], _x(rng), (-1.0) ** i, None)))
    items.append(("bin", _Row("a", _x(rng), 1.0, "r-labelled")))
    items.append(("bin", _Row("b", _x(rng), None, "r-fast")))  # unlabelled fast path
    items.append(("json", _Row("c", _x(rng), -1.0, None)))  # a new task
    items.append(("json", _Row("a", _x(rng), None, "r-json")))
    sparse = np.array([0.5, 0.0, -2.0, 0.0])
    items.append(("json", _Row("b", sparse, 1.0, None, sparse=True)))
    items.append(("bin", _Row("b", sparse, None, "r-sparse", sparse=True)))
    one_task = [_Row("a", _x(rng), y, r) for y, r in [(1.0, None), (None, "r-b0"), (-1.0, None)]]
    items.append(("batch", one_task))
    mixed = [_Row(t, _x(rng), None, None) for t in ("a", "c", "b")]
    items.append(("batch", mixed))
    items.append(("label", (7, None, -1.0)))  # the unlabelled fast-path event
    items.append(("label", (9, None, 1.0)))
    items.append(("label", (11, None, -1.0)))
    items.append(("label", (12, 1, 1.0)))  # a batch row
    items.append(("label", (13, 2, -1.0)))
    return items


def _x_arg(row: _Row) -> Any:
    if row.sparse:
        idx = np.flatnonzero(row.x)
        return (idx, row.x[idx])
    return row.x


def _write(r: redis.Redis, model: str, items: list[tuple[str, Any]], plain: bool) -> None:
    """Append the stream; ``plain`` writes every event as its own JSON entry."""
    log = keys.log_key(model)
    ids: list[list[str]] = []
    for n, (kind, item) in enumerate(items):
        entry_id = f"{1000 + (0 if n < 6 else n)}-{n}"
        if kind == "label":
            index, row, y = item
            event = ids[index][0 if row is None else row]
            r.xadd(log, encode_label(event, y), id=entry_id)  # type: ignore[arg-type]
            ids.append([])
            continue
        rows = item if kind == "batch" else [item]
        if plain:
            got = []
            for j, row in enumerate(rows):
                fields = encode_event(row.task, _x_arg(row), row.y, row.ref)
                got.append(r.xadd(log, fields, id=f"{entry_id}{j}").decode())  # type: ignore[arg-type]
            ids.append(got)
        elif kind == "batch":
            tasks = {row.task for row in rows}
            fields = encode_batch(
                rows[0].task if len(tasks) == 1 else [row.task for row in rows],
                np.stack([row.x for row in rows]),
                y=[row.y for row in rows],
                refs=[row.ref for row in rows],
            )
            eid = r.xadd(log, fields, id=entry_id).decode()  # type: ignore[arg-type]
            ids.append([f"{eid}/{j}" for j in range(len(rows))])
        else:
            row = rows[0]
            fields = encode_event(row.task, _x_arg(row), row.y, row.ref, binary=kind == "bin")
            ids.append([r.xadd(log, fields, id=entry_id).decode()])  # type: ignore[arg-type]


def test_every_entry_kind_round_trips_through_the_worker(
    rb: redis.Redis, settings: Settings
) -> None:
    items = _stream()
    for model, plain in (("mixed", False), ("plain", True)):
        put_model(rb, model, ModelConfig(learner="ipl", n_features=D, tasks=["a", "b"]))
        _write(rb, model, items, plain)
    result = Worker(settings, models=["mixed", "plain"]).run(until_idle=True, timeout=60)
    assert result.dead_letters == 0
    n_events = sum(len(it) if k == "batch" else 1 for k, it in items if k != "label")
    assert result.events == 2 * n_events
    assert result.labels_applied == 2 * 5

    mixed, plain = read_snapshot(rb, "mixed"), read_snapshot(rb, "plain")
    assert mixed is not None and plain is not None
    assert mixed.task_names == plain.task_names == ["a", "b", "c"]
    for name, counts in plain.counters.items():
        assert mixed.counters[name].tolist() == counts.tolist(), name
    # every event is labelled in the end but two rows of the mixed batch
    assert plain.counters["labels"].sum() == n_events - 2
    want = plain.learner.state_dict()
    for key, value in mixed.learner.state_dict().items():
        np.testing.assert_array_equal(value, want[key], err_msg=key)

    def refs(model: str) -> list[str]:
        return [f[b"ref"].decode() for _, f in rb.xrange(keys.queries_key(model))]

    assert refs("mixed") == refs("plain") == ["r-fast", "r-json", "r-sparse", "r-b0", "", "", ""]


# ------------------------------------------------------------------ multiview rounds
MV_TASKS = ["a", "b", "c"]
MV_DIMS = [2, 5, 3]


def _mv_rounds() -> list[tuple[str, dict[str, np.ndarray], float | None]]:
    """Rounds of three views (some leaving a view out, some with zeros), some unlabelled."""
    rng = np.random.default_rng(8)
    out: list[tuple[str, dict[str, np.ndarray], float | None]] = []
    for i in range(40):
        views = {t: rng.integers(-8, 9, size=d) / 4.0 for t, d in zip(MV_TASKS, MV_DIMS)}
        views["b"][rng.random(5) < 0.5] = 0.0
        task = MV_TASKS[i % 3]
        if i % 9 == 4:
            del views[MV_TASKS[(i + 2) % 3]]
        y = None if i % 5 == 2 else float(rng.choice([-1.0, 1.0]))
        out.append((task, views, y))
    return out


def test_every_multiview_encoding_round_trips_through_the_worker(
    rb: redis.Redis, settings: Settings
) -> None:
    rounds = _mv_rounds()
    config = ModelConfig(
        learner="mmperc", n_features=3, tasks=MV_TASKS, params={"task_dims": MV_DIMS[:2]}
    )
    encodings = {"json": False, "dense": True, "sparse": True}
    for model, binary in encodings.items():
        put_model(rb, model, config)
        unlabelled = []
        for n, (task, views, y) in enumerate(rounds):
            given: dict[str, Any] = dict(views)
            if model == "sparse":  # the round's own view sparse, so every view is
                given[task] = (np.flatnonzero(views[task]), views[task][views[task] != 0])
            fields = encode_multiview(task, given, y, ref=f"r{n}", binary=binary)
            assert ("vxi" in fields) is (model == "sparse")
            eid = rb.xadd(keys.log_key(model), fields).decode()  # type: ignore[arg-type]
            if y is None:
                unlabelled.append(eid)
        for eid in unlabelled:  # late labels, through the label entries
            rb.xadd(keys.log_key(model), encode_label(eid, -1))  # type: ignore[arg-type]
    result = Worker(settings, models=list(encodings)).run(until_idle=True, timeout=60)
    assert result.dead_letters == 0
    assert result.labels_applied == 3 * sum(y is None for _, _, y in rounds)

    # the learner on the same rounds, labelled ones in log order, then the late labels
    ref = learners.make("mmperc", n_features=3, n_tasks=3, task_dims=MV_DIMS[:2])
    zeros = {t: np.zeros(d) for t, d in zip(MV_TASKS, MV_DIMS)}
    late = []
    for task, views, y in rounds:
        instances = [views.get(t, zeros[t]) for t in MV_TASKS]
        if y is None:
            late.append((instances, MV_TASKS.index(task)))
        else:
            ref.score_and_learn_views(instances, y, MV_TASKS.index(task))
    for instances, t in late:
        ref.score_and_learn_views(instances, -1.0, t)
    want = ref.state_dict()
    snaps = {model: read_snapshot(rb, model) for model in encodings}
    for model, snap in snaps.items():
        assert snap is not None
        assert snap.task_names == MV_TASKS
        got = snap.learner.state_dict()
        for key, value in want.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(got[key], value, err_msg=f"{model} {key}")
        assert snap.counters["labels"].sum() == len(rounds), model
        queried = [f[b"ref"].decode() for _, f in rb.xrange(keys.queries_key(model))]
        assert queried == [f"r{n}" for n, (_, _, y) in enumerate(rounds) if y is None]


def test_a_multiview_round_for_a_single_instance_learner_is_a_dead_letter(
    rb: redis.Redis, settings: Settings
) -> None:
    put_model(rb, "m", ModelConfig(learner="ipl", n_features=D, tasks=["a"]))
    rb.xadd(keys.log_key("m"), encode_multiview("a", {"a": np.ones(D)}, y=1))  # type: ignore[arg-type]
    result = Worker(settings, models=["m"]).run(until_idle=True, timeout=30)
    assert result.dead_letters == 1
    (_, dead), *_ = rb.xrange(keys.dead_key("m"))
    assert b"needs a multiview learner" in dead[b"reason"]


# ------------------------------------------------------------------ the label script
def test_the_label_script_is_built_from_the_codec_layout() -> None:
    for name in (
        codec.KIND,
        codec.N,
        codec.Y,
        codec.Y32,
        codec.KIND_EVENT,
        codec.KIND_BATCH,
        codec.KIND_MULTIVIEW,
    ):
        assert f"'{name}'" in APPEND_LABEL.source


@pytest.mark.parametrize(
    ("fields", "row", "status"),
    [
        (encode_event("a", [1.0, 2.0, 0.0, 0.0], y=-1), None, b"inline"),
        (encode_event("a", [1.0, 2.0, 0.0, 0.0], y=-1, binary=True), None, b"inline"),
        (encode_event("a", [1.0, 2.0, 0.0, 0.0], binary=True), None, b"accepted"),
        (encode_batch("a", np.ones((3, D)), y=[1, None, -1]), 2, b"inline32"),
        (encode_batch("a", np.ones((3, D)), y=[1, None, -1]), 1, b"accepted"),
        (encode_batch(["a", "b", "a"], np.ones((3, D))), 3, b"noevent"),
        (encode_multiview("a", {"a": np.ones(2), "b": np.ones(D)}, y=-1), None, b"inline"),
        (encode_multiview("a", {"a": np.ones(2), "b": np.ones(D)}), None, b"accepted"),
        (encode_multiview("a", {"a": np.ones(2)}), 0, b"noevent"),
    ],
)
def test_the_label_script_reads_what_the_encoders_write(
    rb: redis.Redis, fields: dict[str, bytes | str], row: int | None, status: bytes
) -> None:
    put_model(rb, "m", ModelConfig(learner="ipl", n_features=D, tasks=["a", "b"]))
    entry = rb.xadd(keys.log_key("m"), fields).decode()  # type: ignore[arg-type]
    event = entry if row is None else f"{entry}/{row}"
    label = encode_label(event, 1)
    args: list[Any] = [entry, -1 if row is None else row, event, label[codec.Y]]
    for item in label.items():
        args.extend(item)
    label_keys = [keys.config_key("m"), keys.log_key("m"), keys.labels_key("m")]
    reply = APPEND_LABEL.run(rb, [*label_keys, keys.answers_key("m")], args)
    assert reply[0] == status
    if status == b"inline":
        assert reply[1] == b"-1"
    if status == b"inline32":
        assert np.frombuffer(reply[1], "<f4")[0] == -1.0
