"""The worker's state machine alone: read boundaries never change the result.

The worker applies whatever each XREAD returns; groups of labelled events are
formed from the log only, and a group at the end of a read is held back until
it is known to be complete. So feeding the same entries in chunks of any sizes
(carrying the held-back tail forward, as the worker does) must give exactly the
state of one call with everything.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from service.store.codec import encode_batch, encode_event, encode_label
from service.store.models import ModelConfig, initial_snapshot
from service.worker.apply import GROUP_MIN, Applier
from service.worker.outbox import Outbox
from service.worker.state import ModelState

D = 5
# an explicit interaction matrix: the batch update W += A^-1[:, tasks] @ (y X) rounds
# differently from the row-by-row rank-one updates, so how rows are grouped shows in the state
CONFIG = ModelConfig(
    learner="cmtl",
    params={"A": [[2.0, -0.5, 0.0], [-0.5, 2.0, -0.5], [0.0, -0.5, 2.0]]},
    n_features=D,
    tasks=["a", "b", "c"],
    generation=1,
)


def _raw(fields: dict[str, bytes | str]) -> list[bytes]:
    flat: list[bytes] = []
    for k, v in fields.items():
        flat += [k.encode(), v if isinstance(v, bytes) else v.encode()]
    return flat


def _entries(seed: int) -> list[list[Any]]:
    """About 300 entries; several per millisecond, mostly labelled single events."""
    rng = np.random.default_rng(seed)
    out: list[list[Any]] = []
    unlabelled: list[str] = []
    while len(out) < 300:
        i = len(out)
        entry_id = f"{1000 + i // 9}-{i % 9}"
        x = rng.normal(size=D)
        task = "abc"[int(rng.integers(3))]
        u = rng.random()
        if u < 0.75:
            fields = encode_event(task, x, y=1 if x[0] + x[1] > 0 else -1, binary=True)
        elif u < 0.87:
            fields = encode_event(task, x, binary=True)
            unlabelled.append(entry_id)
        elif u < 0.95 and unlabelled:
            fields = encode_label(unlabelled.pop(0), -1)
        else:
            fields = encode_batch(["a", "b", "c"], rng.normal(size=(3, D)), y=[1, None, -1])
        out.append([entry_id.encode(), _raw(fields)])
    return out


def _state() -> tuple[ModelState, Applier]:
    state = ModelState("m", initial_snapshot("m", CONFIG))
    return state, Applier(state, Outbox(), lambda entry_id: None)


def _fetcher(entries: list[list[Any]]) -> Any:
    by_id = {e[0].decode(): e[1] for e in entries}
    return lambda entry_id: by_id.get(entry_id)


FAR_FUTURE = 10**15


@given(st.lists(st.integers(min_value=1, max_value=299), max_size=12), st.integers(0, 3))
@settings(max_examples=40, deadline=None)
def test_chunked_application_equals_one_call(cuts: list[int], seed: int) -> None:
    entries = _entries(seed)
    whole, applier = _state()
    applier.fetch = _fetcher(entries)
    assert applier.apply(entries, FAR_FUTURE) == []

    chunked, applier = _state()
    applier.fetch = _fetcher(entries)
    pending: list[Any] = []
    bounds = [0, *sorted(set(cuts)), len(entries)]
    for start, end in itertools.pairwise(bounds):
        last = end == len(entries)
        # a read that hit COUNT: nothing at its end is known to be complete
        pending = applier.apply(pending + entries[start:end], FAR_FUTURE if last else None)
        # what is held back is one group: labelled events of one millisecond
        assert len({p[0].split(b"-")[0] for p in pending}) <= 1
    assert pending == []

    sw, sc = whole.learner.state_dict(), chunked.learner.state_dict()
    for key, value in sw.items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, sc[key]), key
        else:
            assert value == sc[key], key
    assert chunked.last_id == whole.last_id == entries[-1][0].decode()
    assert chunked.totals == whole.totals
    for name, counts in whole.counters().items():
        assert np.array_equal(counts, chunked.counters()[name]), name


def test_a_tail_group_waits_for_the_clock_and_then_applies() -> None:
    entries = [
        [f"500-{i}".encode(), _raw(encode_event("a", np.ones(D), y=1, binary=True))]
        for i in range(GROUP_MIN + 2)
    ]
    state, applier = _state()
    # the server clock still reads 500 ms: more events of that millisecond may come
    tail = applier.apply(entries, horizon_ms=500)
    assert tail == entries
    assert state.totals["entries"] == 0
    assert state.last_id == "0-0"
    # one millisecond later the group is complete
    assert applier.apply(tail, horizon_ms=501) == []
    assert state.totals["events"] == GROUP_MIN + 2
    assert state.last_id == f"500-{GROUP_MIN + 1}"
