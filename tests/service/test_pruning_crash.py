"""The default learner prunes its grid inside the worker, deterministically across crashes.

``adaptive-auto`` drops losing configurations and views at fixed counts of labelled
events (docs/algorithms.md Sec. 11.9), so its state must not depend on how the worker
cuts the log into reads, groups and batches, nor on where a SIGKILL stops it and a
replay from the last snapshot resumes it. One log of batch entries (1 to 60 rows, some
unlabelled) and single events is applied to two models with the same configuration: by
one uninterrupted worker, and by workers killed at random points. Both end with the state
of the learner fed the labelled rows directly, and that learner pruned.
"""

from __future__ import annotations

import numpy as np
import pytest
import redis

import learners
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_batch, encode_event
from service.store.models import ModelConfig, put_model
from service.store.snapshot import read_snapshot
from service.worker import Worker
from tests.service.helpers import (
    assert_same_learner,
    assert_same_snapshot,
    kill_worker_while_it_works,
)

D = 8
TASKS = ["t0", "t1", "t2"]
#: Checks every 150 labelled events, so that a few thousand prune the grid.
CONFIG = ModelConfig(
    learner="adaptive-auto",
    params={"prune_every": 150, "views": "raw,l2,log"},
    n_features=D,
    tasks=TASKS,
    seed=3,
)


def _log(
    n_entries: int, seed: int
) -> tuple[list[tuple[str, dict]], np.ndarray, np.ndarray, np.ndarray]:
    """Entries with explicit ids, and the labelled rows in log order (X, y, task index)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(len(TASKS), D)) * 0.5 + rng.normal(size=D)
    entries: list[tuple[str, dict]] = []
    rows: list[tuple[np.ndarray, float, int]] = []
    for i in range(n_entries):
        n = 1 if rng.random() < 0.3 else int(rng.integers(1, 61))
        # rows of very different lengths: the views disagree, so some are dropped
        X = (rng.normal(size=(n, D)) * rng.lognormal(0.0, 1.5, size=(n, 1))).astype(np.float32)
        t = rng.integers(0, len(TASKS), size=n)
        y = np.where(np.einsum("ij,ij->i", X, w[t]) >= 0, 1.0, -1.0)
        y[rng.random(n) < 0.05] *= -1.0
        labelled = rng.random(n) < 0.9
        entry_id = f"{i // 5 + 1}-{i % 5}"
        if n == 1:
            label = float(y[0]) if labelled[0] else None
            fields = encode_event(TASKS[int(t[0])], X[0], y=label, binary=True)
        else:
            fields = encode_batch(
                [TASKS[int(k)] for k in t],
                X,
                [float(v) if ok else None for v, ok in zip(y, labelled, strict=True)],
            )
        entries.append((entry_id, fields))
        rows.extend(
            (X[r].astype(np.float64), float(y[r]), int(t[r])) for r in range(n) if labelled[r]
        )
    X_all = np.array([r[0] for r in rows])
    return entries, X_all, np.array([r[1] for r in rows]), np.array([r[2] for r in rows])


@pytest.mark.slow
def test_a_pruning_default_learner_survives_sigkill_with_the_state_of_a_direct_run(
    rb: redis.Redis, redis_url: str, settings: Settings
) -> None:
    entries, X, y, tasks = _log(700, seed=11)
    assert len(y) > 10_000
    for model in ("a", "b"):
        put_model(rb, model, CONFIG)
        with rb.pipeline(transaction=False) as p:
            for entry_id, fields in entries:
                p.xadd(keys.log_key(model), fields, id=entry_id)  # type: ignore[arg-type]
            p.execute()

    result = Worker(settings, models=["a"]).run(until_idle=True, timeout=120)
    assert result.entries == len(entries)
    kills, _ = kill_worker_while_it_works(
        redis_url,
        "b",
        "w-prune",
        3,
        np.random.default_rng(7),
        snapshot_every_entries=40,
        snapshot_every_seconds=0.05,
        read_count=25,
        lease_ttl_ms=3000,
    )
    assert kills >= 2, f"only {kills} kills before the worker finished"

    a, b = read_snapshot(rb, "a"), read_snapshot(rb, "b")
    assert a is not None and b is not None
    assert b.last_id == a.last_id == entries[-1][0]
    assert_same_snapshot(a, b)
    # the learner fed the labelled rows in one call: the same state, and it pruned
    direct = learners.make(
        "adaptive-auto", n_features=D, n_tasks=len(TASKS), seed=3, **CONFIG.params
    )
    direct.score_and_learn_many(X.astype(np.float32).astype(np.float64), y, tasks)
    assert_same_learner(a.learner, direct)
    grid = 3 * 8
    left = sum(len(v.alive_) for v in direct.views_)
    assert left < grid and direct.view_events_[0] == len(y)
