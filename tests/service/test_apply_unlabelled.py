"""Unlabelled rows of batch entries: one ``decide_and_query_many`` call per run of them.

The worker scores the unlabelled rows of a batch entry, draws the learner's query
decisions and emits the label requests with one learner call per run of such rows, and
keeps the entry whole for the rows' labels (docs/architecture.md, "Label requests").
These tests compare it with the row-by-row rule (``decide_and_query`` on each float32
row, on a copy of the learner), check that a label of such a row is learned from the
entry kept in memory, and that the cache counts rows, not entries.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import learners
from service.store import keys
from service.store.codec import encode_batch, encode_label
from service.store.models import ModelConfig, initial_snapshot, put_model
from service.worker import Worker
from service.worker import state as state_module
from service.worker.apply import Applier
from service.worker.outbox import Outbox
from service.worker.reading import REQUESTS_PER_CALL
from service.worker.state import ModelState
from tests.service.helpers import assert_same_learner
from tests.service.test_apply import _raw

D = 6
TASKS = ["a", "b", "c", "d"]
#: Active learners with the batch rule (amlc, amlc-adaptive, selective-sampling over a
#: Perceptron and over an adaptive base, random-query), one that takes its rows one by one
#: (peer: a second draw and a step on the peers' vote) and a passive learner (every row
#: asked): id -> (learner, parameters).
LEARNERS: dict[str, tuple[str, dict[str, Any]]] = {
    "amlc": ("amlc", {}),
    "amlc-adaptive": ("amlc-adaptive", {}),
    "selective-sampling": ("selective-sampling", {}),
    "selective-adaptive": ("selective-sampling", {"base": "adaptive-logistic", "b": 0.5}),
    "random-query": ("random-query", {"query_rate": 0.3}),
    "peer": ("peer", {}),
    "cmtl": ("cmtl", {}),
}


def _model(key: str) -> ModelState:
    name, params = LEARNERS[key]
    config = ModelConfig(learner=name, params=params, n_features=D, tasks=TASKS, generation=1)
    return ModelState("m", initial_snapshot("m", config))


def _entries(seed: int, n_entries: int = 40) -> list[tuple[str, list[str], np.ndarray, list[Any]]]:
    """Batch entries of 1-30 rows: all labelled, all unlabelled, or mixed in runs."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(len(TASKS), D))
    out = []
    for i in range(n_entries):
        n = int(rng.integers(1, 31))
        X = rng.normal(size=(n, D)).astype(np.float32)
        t = rng.integers(len(TASKS), size=n)
        y: list[Any] = np.where(np.einsum("ij,ij->i", X, w[t]) >= 0, 1.0, -1.0).tolist()
        kind = i % 3
        if kind == 1:
            y = [None] * n
        elif kind == 2:
            cut = rng.integers(0, n + 1, size=2)
            for r in range(int(cut.min()), int(cut.max())):
                y[r] = None
        out.append((f"{1000 + i}-0", [TASKS[k] for k in t], X, y))
    return out


def _apply(state: ModelState, entries: list[Any]) -> Outbox:
    outbox = Outbox()
    applier = Applier(state, outbox, lambda entry_id: None)
    raw = [[eid.encode(), _raw(encode_batch(names, X, y))] for eid, names, X, y in entries]
    applier.apply(raw, horizon_ms=10**15)
    return outbox


def _reference(name: str, entries: list[Any]) -> tuple[Any, list[dict[str, Any]]]:
    """The row-by-row rule on a copy of the learner: labelled runs learned as the worker
    learns them (one ``score_and_learn_many`` per run), each unlabelled row asked with
    ``decide_and_query``; returns the learner and the label requests it asks for."""
    learner = _model(name).learner
    reports = learners.query_probability_reporter(learner) is not None
    requests = []
    for eid, names, X, y in entries:
        tasks = np.array([TASKS.index(t) for t in names])
        labelled = np.array([v is not None for v in y])
        starts = [0, *(np.flatnonzero(labelled[1:] != labelled[:-1]) + 1).tolist(), len(y)]
        for a, e in itertools.pairwise(starts):
            if labelled[a]:
                learner.score_and_learn_many(X[a:e], np.array(y[a:e], float), tasks[a:e])
                continue
            for row in range(a, e):
                score, p, asked = learner.decide_and_query(
                    X[row], int(tasks[row]), probability=reports
                )
                if asked:
                    requests.append(
                        {"event": f"{eid}/{row}", "task": names[row], "score": score, "p": p}
                    )
    return learner, requests


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_unlabelled_rows_ask_what_the_row_by_row_rule_asks(name: str) -> None:
    entries = _entries(seed=3)
    state = _model(name)
    outbox = _apply(state, entries)
    want_learner, want = _reference(name, entries)

    got = outbox.requests
    assert [r["event"] for r in got] == [r["event"] for r in want]
    assert [r["task"] for r in got] == [r["task"] for r in want]
    np.testing.assert_allclose(
        [float(r["score"]) for r in got], [r["score"] for r in want], rtol=1e-12, atol=1e-12
    )
    for g, w in zip(got, want, strict=True):
        assert (g["p"] == "") == (w["p"] is None)
        if w["p"] is not None:
            assert float(g["p"]) == pytest.approx(w["p"], rel=1e-12)
    assert_same_learner(state.learner, want_learner)  # the same draws and state

    unlabelled = [(names[r], y[r] is None) for _, names, _, y in entries for r in range(len(y))]
    counters = state.counters()
    for k, task in enumerate(TASKS):
        rows = [u for t, u in unlabelled if t == task]
        assert counters["events"][k] == counters["predictions"][k] == len(rows)
        assert counters["labels"][k] == rows.count(False)
        assert counters["queries"][k] == sum(r["task"] == task for r in want)
    assert state.totals["label_requests"] == len(want)
    assert name == "cmtl" or 0 < len(want) < sum(u for _, u in unlabelled)


def test_a_label_of_a_batch_row_is_learned_from_the_entry_kept_in_memory() -> None:
    """Labels of unlabelled rows (of an unlabelled and of a mixed entry) are learned from
    the entries kept in memory, with no read of the log, and give the state of the same
    labels read from the log; a labelled row, or a row past the end, is refused."""
    rng = np.random.default_rng(5)
    X = [rng.normal(size=(n, D)).astype(np.float32) for n in (10, 8, 3)]
    entries = [
        [b"1000-0", _raw(encode_batch("a", X[0], [1.0, -1.0] * 5))],
        [b"1001-0", _raw(encode_batch(["a", "b"] * 4, X[1], None))],
        [b"1002-0", _raw(encode_batch("c", X[2], [1.0, None, -1.0]))],
    ]
    labels = [
        [b"2000-0", _raw(encode_label("1001-0/0", 1.0))],
        [b"2000-1", _raw(encode_label("1001-0/7", -1.0))],
        [b"2000-2", _raw(encode_label("1002-0/1", 1.0))],
        [b"2000-3", _raw(encode_label("1002-0/0", 1.0))],  # a labelled row
        [b"2000-4", _raw(encode_label("1001-0/8", 1.0))],  # no such row
    ]
    by_id = {e[0].decode(): e[1] for e in entries}
    states = []
    for from_memory in (True, False):
        state = _model("amlc")
        fetched: list[str] = []
        outbox = Outbox()

        def fetch(eid: str, fetched: list[str] = fetched) -> Any:
            fetched.append(eid)
            return by_id.get(eid)

        applier = Applier(state, outbox, fetch)
        applier.apply(entries, horizon_ms=10**15)
        assert state.recent_events == 8 + 1 and list(state.recent) == ["1001-0", "1002-0"]
        if not from_memory:
            state.recent.clear()
        applier.apply(labels, horizon_ms=10**15)
        assert fetched == (
            [] if from_memory else ["1001-0", "1001-0", "1002-0", "1002-0", "1001-0"]
        )
        assert state.totals["labels_applied"] == 3
        reasons = [d["reason"] for d in outbox.dead]
        assert len(reasons) == 2
        assert "already has a label" in reasons[0] and "has no row 8" in reasons[1]
        states.append(state)
    assert_same_learner(states[0].learner, states[1].learner)
    assert states[0].counters()["labels"].tolist() == [10 + 1, 1, 2 + 1, 0]


def test_the_event_cache_counts_rows_and_drops_the_oldest_entries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(state_module, "EVENT_CACHE_SIZE", 10)
    state = _model("amlc")
    state.remember("1-0", "batch of six", 6)
    state.remember("2-0", "one event")
    state.remember("3-0", "batch of three", 3)
    assert list(state.recent) == ["1-0", "2-0", "3-0"] and state.recent_events == 10
    state.remember("4-0", "batch of two", 2)  # over by 2: the batch of six goes
    assert list(state.recent) == ["2-0", "3-0", "4-0"] and state.recent_events == 6
    state.forget("3-0")
    state.forget("3-0")
    assert list(state.recent) == ["2-0", "4-0"] and state.recent_events == 3
    state.remember("5-0", "batch of twelve", 12)  # larger than the cache: nothing stays
    assert list(state.recent) == [] and state.recent_events == 0


def test_a_label_of_a_row_whose_entry_left_the_cache_is_read_from_the_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(state_module, "EVENT_CACHE_SIZE", 40)
    X = np.random.default_rng(2).normal(size=(30, D)).astype(np.float32)
    entries = [[f"{1000 + i}-0".encode(), _raw(encode_batch("a", X, None))] for i in range(2)]
    state = _model("amlc")
    fetched: list[str] = []

    def fetch(entry_id: str) -> Any:
        fetched.append(entry_id)
        return {e[0].decode(): e[1] for e in entries}.get(entry_id)

    applier = Applier(state, Outbox(), fetch)
    applier.apply(entries, horizon_ms=10**15)
    assert list(state.recent) == ["1001-0"]
    applier.apply([[b"2000-0", _raw(encode_label("1000-0/4", 1.0))]], horizon_ms=10**15)
    applier.apply([[b"2000-1", _raw(encode_label("1001-0/4", 1.0))]], horizon_ms=10**15)
    assert fetched == ["1000-0"] and state.totals["labels_applied"] == 2


@pytest.mark.parametrize("where", ["server", "cluster"])
def test_a_worker_writes_every_label_request_of_a_large_batch_in_order(
    where: str, request: pytest.FixtureRequest
) -> None:
    """2,500 unlabelled rows of a passive model (every row asked) through a real worker:
    2,500 label requests on the stream, in row order, with every field (the requests
    leave in script calls of :data:`~service.worker.reading.REQUESTS_PER_CALL`)."""
    r = request.getfixturevalue("rb" if where == "server" else "crb")
    settings = request.getfixturevalue("settings" if where == "server" else "cluster_settings")
    n = 2 * REQUESTS_PER_CALL + 500
    X = np.random.default_rng(4).normal(size=(n, D)).astype(np.float32)
    refs = [f"doc-{i}" if i % 2 else None for i in range(n)]
    put_model(r, "m", ModelConfig(learner="cmtl", n_features=D, tasks=TASKS))
    names = [TASKS[i % len(TASKS)] for i in range(n)]
    entry_id = r.xadd(keys.log_key("m"), encode_batch(names, X, None, refs)).decode()
    reference = learners.make("cmtl", n_features=D, n_tasks=len(TASKS))

    result = Worker(settings, models=["m"]).run(until_idle=True, timeout=60)

    assert result.events == n
    requests = [
        {k.decode(): v.decode() for k, v in fields.items()}
        for _, fields in r.xrange(keys.queries_key("m"))
    ]
    assert [q["event"] for q in requests] == [f"{entry_id}/{i}" for i in range(n)]
    assert [q["task"] for q in requests] == names
    assert [q["ref"] for q in requests] == [ref or "" for ref in refs]
    assert {q["p"] for q in requests} == {""} and len({q["ts"] for q in requests}) <= 3
    want = [reference.decision_one(X[i], i % len(TASKS)) for i in range(n)]
    assert [float(q["score"]) for q in requests] == want
