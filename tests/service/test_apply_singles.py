"""Labelled single events give the same state whether the worker groups them or not.

Single events of one millisecond form a group that the worker applies with one
``score_and_learn_many`` call on their dense rows; other single events are learned one
by one (docs/architecture.md, "Applying log entries"). For a learner whose per-event
call is not its batch path, a single event is a one-row batch of its dense row, zeros
and all, as the group reads it: so grouping shows nowhere in the state, bit for bit,
also on rows with zero entries (where a sparse form of the row would sum some norms
over other entries).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from service.store.codec import encode_event
from service.store.models import ModelConfig, initial_snapshot
from service.worker.apply import GROUP_MIN, Applier
from service.worker.outbox import Outbox
from service.worker.state import ModelState
from tests.service.helpers import assert_same_learner
from tests.service.test_apply import _raw

D = 7
TASKS = ["a", "b", "c"]
FAR_FUTURE = 10**15


def _events(seed: int, n: int) -> list[tuple[str, np.ndarray, float]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)).astype(np.float32)
    X[rng.random(size=X.shape) < 0.3] = 0.0
    return [
        (TASKS[int(rng.integers(3))], X[i], 1.0 if X[i, 0] + X[i, 1] >= 0 else -1.0)
        for i in range(n)
    ]


def _apply(learner: str, events: list[tuple[str, np.ndarray, float]], per_ms: int) -> Any:
    """Apply the events as entries, ``per_ms`` of them in each millisecond."""
    config = ModelConfig(learner=learner, n_features=D, tasks=TASKS, generation=1)
    state = ModelState("m", initial_snapshot("m", config))
    applier = Applier(state, Outbox(), lambda entry_id: None)
    assert applier.singles_as_batches, "the test is about learners learning singles as batches"
    entries = [
        [f"{1000 + i // per_ms}-{i % per_ms}".encode(), _raw(encode_event(t, x, y=y, binary=True))]
        for i, (t, x, y) in enumerate(events)
    ]
    assert applier.apply(entries, FAR_FUTURE) == []
    return state


@pytest.mark.parametrize("learner", ["adaptive-auto", "amlc-adaptive"])
def test_grouped_and_single_events_give_the_same_state(learner: str) -> None:
    events = _events(3, 120)
    alone = _apply(learner, events, 1)  # one event per millisecond: never grouped
    grouped = _apply(learner, events, 2 * GROUP_MIN)  # groups of 2 * GROUP_MIN events
    assert alone.totals == grouped.totals
    assert alone.totals["labelled_events"] == len(events)
    assert_same_learner(alone.learner, grouped.learner)
