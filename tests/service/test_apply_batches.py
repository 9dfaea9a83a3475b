"""Labelled batch entries merged into one learner call: the same state as one by one.

The worker reads fully labelled batch entries with a fast reader and, for learners
whose batch results do not depend on where a stream is cut (``exact_batch_merge``),
applies a run of consecutive ones with a single ``score_and_learn_many`` call
(docs/architecture.md, "Applying log entries"). These tests compare that with the
row-by-row reference (``score_and_learn_one`` on float64 rows, one call per event)
bit for bit, and check that a bad entry inside a run is handled exactly as alone.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from service.store.codec import encode_batch, encode_event
from service.store.models import ModelConfig, initial_snapshot
from service.worker.apply import Applier
from service.worker.outbox import Outbox
from service.worker.state import ModelState
from tests.service.helpers import assert_same_learner
from tests.service.test_apply import _raw

D = 6
TASKS = ["a", "b", "c", "d"]
A = [[2.0, -0.5, 0.0, 0.0], [-0.5, 2.0, -0.5, 0.0], [0.0, -0.5, 2.0, -0.5], [0.0, 0.0, -0.5, 2.0]]
CONFIGS = {
    "cmtl": {},
    "cmtl-matrix": {"A": A},
    "ipl": {},
    "pt-global": {},
    "pa-global": {},
    "pa-individual": {"variant": "pa1", "C": 0.5},
    "stl": {},
}


def _config(name: str, params: dict[str, Any] | None = None) -> ModelConfig:
    learner = name.split("-matrix")[0]
    return ModelConfig(
        learner=learner,
        params=CONFIGS[name] if params is None else params,
        n_features=D,
        tasks=TASKS,
        generation=1,
    )


class _Counting:
    """Wraps a learner's ``score_and_learn_many`` to count the calls (nothing else changes)."""

    def __init__(self, learner: Any) -> None:
        self.calls: list[int] = []
        self._inner = learner.score_and_learn_many

    def __call__(self, X: Any, y: Any, task: Any) -> np.ndarray:
        self.calls.append(int(np.shape(X)[0]))
        result: np.ndarray = self._inner(X, y, task)
        return result


def _stream(seed: int, n_entries: int) -> tuple[list[list[Any]], list[tuple[np.ndarray, ...]]]:
    """Labelled batch entries (both task forms, 1-40 rows, zeros in some rows) and their rows."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(len(TASKS), D))
    entries: list[list[Any]] = []
    rows: list[tuple[np.ndarray, ...]] = []
    for i in range(n_entries):
        n = int(rng.integers(1, 41))
        X = rng.normal(size=(n, D)).astype(np.float32)
        X[rng.random(size=(n, D)) < 0.2] = 0.0
        t = rng.integers(len(TASKS), size=n)
        if i % 3 == 0:
            t[:] = t[0]
        y = np.where(np.einsum("ij,ij->i", X, w[t]) >= 0, 1.0, -1.0)
        y[rng.random(n) < 0.1] *= -1.0
        names = TASKS[int(t[0])] if i % 3 == 0 else [TASKS[k] for k in t]
        fields = encode_batch(names, X, y)
        entries.append([f"{1000 + i}-0".encode(), _raw(fields)])
        rows.append((X.astype(np.float64), y, t.astype(np.int64)))
    return entries, rows


def _applier(config: ModelConfig) -> tuple[ModelState, Applier]:
    state = ModelState("m", initial_snapshot("m", config))
    return state, Applier(state, Outbox(), lambda entry_id: None)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_run_of_batches_is_one_call_and_equals_the_row_by_row_reference(name: str) -> None:
    entries, rows = _stream(seed=len(name), n_entries=30)
    state, applier = _applier(_config(name))
    assert applier.merge_batches
    counting = _Counting(state.learner)
    state.learner.score_and_learn_many = counting  # type: ignore[method-assign]
    assert applier.apply(entries, horizon_ms=None) == []
    n_rows = sum(r[0].shape[0] for r in rows)
    assert counting.calls == [n_rows]  # the whole run in one learner call

    reference, _ = _applier(_config(name))
    mistakes = np.zeros(len(TASKS), dtype=np.int64)
    for X, y, t in rows:
        for x, label, task in zip(X, y.tolist(), t.tolist(), strict=True):
            score = reference.learner.score_and_learn_one(x, label, task)
            mistakes[task] += (score >= 0.0) != (label > 0.0)
    assert_same_learner(state.learner, reference.learner)
    counters = state.counters()
    assert counters["mistakes"].tolist() == mistakes.tolist()
    assert mistakes.sum() > 0
    every = np.bincount(np.concatenate([r[2] for r in rows]), minlength=len(TASKS))
    for counter in ("events", "predictions", "labels"):
        assert counters[counter].tolist() == every.tolist()
    assert state.totals["events"] == state.totals["labelled_events"] == n_rows
    assert state.totals["entries"] == len(entries)
    assert state.last_id == entries[-1][0].decode()


@pytest.mark.parametrize("name", ["cmtl", "cmtl-matrix", "pa-individual"])
def test_how_the_log_is_read_does_not_change_the_state(name: str) -> None:
    entries, _ = _stream(seed=7, n_entries=40)
    whole, applier = _applier(_config(name))
    applier.apply(entries, horizon_ms=None)
    cut, applier = _applier(_config(name))
    for start, end in [(0, 1), (1, 9), (9, 10), (10, 33), (33, 40)]:
        assert applier.apply(entries[start:end], horizon_ms=None) == []
    assert_same_learner(whole.learner, cut.learner)
    for counter, counts in whole.counters().items():
        assert np.array_equal(counts, cut.counters()[counter]), counter


def test_a_bad_entry_inside_a_run_is_handled_as_alone() -> None:
    entries, _ = _stream(seed=3, n_entries=8)
    bad_x = np.ones((3, D), dtype=np.float32)
    bad_x[1, 2] = np.nan
    mixed = [
        entries[0],
        [b"2000-0", _raw(encode_batch("a", bad_x, [1, 1, -1]))],  # NaN in X: dead letter
        entries[1],
        [b"2000-1", _raw(encode_batch("b", np.ones((2, D)), [1, 0.5]))],  # label 0.5: dead letter
        entries[2],
        [b"2000-2", _raw(encode_batch(["a", "new"], np.ones((2, D)), [1, -1]))],  # a new task
        entries[3],
        [b"2000-3", _raw(encode_batch("c", np.ones((2, D)), [1, None]))],  # an unlabelled row
        entries[4],
        [b"2000-4", _raw(encode_event("d", np.ones(D), y=1, binary=True))],  # a single event
        *entries[5:],
    ]
    state, applier = _applier(_config("cmtl"))
    assert applier.apply(mixed, horizon_ms=10**15) == []
    assert state.totals["dead_letters"] == 2
    reasons = [fields["reason"] for fields in applier.outbox.dead]
    assert "X contains NaN or infinite values" in reasons[0]
    assert "-1 or +1" in reasons[1]
    assert state.task_names == [*TASKS, "new"]

    one_by_one, applier = _applier(_config("cmtl"))
    for entry in mixed:
        applier.apply([entry], horizon_ms=10**15)
    assert_same_learner(state.learner, one_by_one.learner)
    assert state.totals == one_by_one.totals
    for counter, counts in state.counters().items():
        assert np.array_equal(counts, one_by_one.counters()[counter]), counter
    assert len(state.recent) == len(one_by_one.recent) == 1  # the unlabelled row


def test_learners_with_batch_wide_preprocessing_apply_entry_by_entry() -> None:
    entries, _ = _stream(seed=5, n_entries=6)
    state, applier = _applier(_config("cmtl", {"l2_normalize": True}))
    assert not applier.merge_batches
    counting = _Counting(state.learner)
    state.learner.score_and_learn_many = counting  # type: ignore[method-assign]
    applier.apply(entries, horizon_ms=None)
    assert len(counting.calls) == len(entries)
    assert state.totals["events"] == sum(int(e[1][3]) for e in entries)


@pytest.mark.parametrize("name", ["cmtl", "pa-individual"])
def test_a_run_of_one_entry_is_read_from_its_bytes_where_the_learner_can(name: str) -> None:
    """A learner that reads read-only float32 rows in place (``reads_readonly_rows``) learns
    a one-entry run straight from the entry's bytes; a merged run, or another learner,
    goes through the reused row buffer. The state is the same either way (the tests above)."""
    entries, _ = _stream(seed=9, n_entries=5)
    state, applier = _applier(_config(name))
    seen: list[bool] = []
    inner = state.learner.score_and_learn_many

    def recording(X: Any, y: Any, task: Any) -> np.ndarray:
        seen.append(bool(X.flags.writeable))
        result: np.ndarray = inner(X, y, task)
        return result

    state.learner.score_and_learn_many = recording  # type: ignore[method-assign]
    for entry in entries[:3]:
        assert applier.apply([entry], horizon_ms=None) == []
    assert applier.apply(entries[3:], horizon_ms=None) == []  # two entries: one merged call
    in_place = state.learner.reads_readonly_rows
    assert in_place == (name == "cmtl")
    assert seen == [not in_place] * 3 + [True]
    assert state.totals["entries"] == 5


def _respelled(flat: list[Any], spell: Any) -> list[Any]:
    """The entry with its list of task names written by ``spell`` (same names, other bytes)."""
    out = list(flat)
    at = out.index(b"tasks") + 1
    out[at] = spell(json.loads(out[at])).encode()
    return out


@pytest.mark.parametrize(
    "spell",
    [
        pytest.param(lambda names: json.dumps(names), id="spaced"),
        pytest.param(
            lambda names: "[" + ",".join(f'"\\u{ord(n):04x}"' for n in names) + "]", id="escaped"
        ),
    ],
)
def test_task_lists_of_other_encoders_give_the_same_state(spell: Any) -> None:
    """A list the compiled look-up declines (spaces, escapes: service/worker/task_lookup.py)
    is parsed as JSON instead; the state is that of our encoder's plain list, which the
    look-up reads."""
    entries, _ = _stream(seed=5, n_entries=30)
    plain, applier = _applier(_config("cmtl"))
    listed = [flat for _, flat in entries if b"tasks" in flat]
    assert len(listed) >= 15
    for flat in listed:
        names = flat[flat.index(b"tasks") + 1]
        n = len(json.loads(names))
        assert plain.task_lookup.indices(names, n, plain.task_names) is not None
        respelled = _respelled(flat, spell)[flat.index(b"tasks") + 1]
        assert plain.task_lookup.indices(respelled, n, plain.task_names) is None
    assert applier.apply(entries, horizon_ms=None) == []
    other, applier = _applier(_config("cmtl"))
    respelled_entries = [
        [eid, _respelled(flat, spell) if b"tasks" in flat else flat] for eid, flat in entries
    ]
    assert applier.apply(respelled_entries, horizon_ms=None) == []
    assert_same_learner(plain.learner, other.learner)
    for counter, counts in plain.counters().items():
        assert np.array_equal(counts, other.counters()[counter]), counter
