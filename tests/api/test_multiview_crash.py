"""Multiview rounds from the API through a worker killed with SIGKILL: bit-identical state.

The same rounds (labelled and unlabelled, dense and sparse views, some leaving
a task out) and the annotators' late labels for the unlabelled ones go through
``POST /events``, ``POST /predict`` and ``POST /label`` to two models of
``mmperc`` with tasks in spaces of different dimensions. Model ``a`` is applied
by one uninterrupted worker; model ``b`` by a worker process killed with SIGKILL
at random points (each life after it wrote a snapshot) and restarted. Both end
with the same learner state bit for bit, the same counters, labels applied once,
and the same label requests, none written twice (docs/architecture.md, "Crash
determinism").
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

from service.settings import Settings
from service.store import keys
from service.store.snapshot import read_snapshot
from service.worker import Worker
from tests.service.helpers import assert_same_snapshot, kill_worker_while_it_works

TASKS = ["t0", "t1", "t2", "t3"]
DIMS = [6, 9, 4]  # t3 has n_features = 7
SPEC = {
    "learner": "mmperc",
    "params": {"task_dims": DIMS, "b": 0.5},
    "n_features": 7,
    "tasks": TASKS,
    "seed": 1,
}
N_ROUNDS = 6000
BATCH = 50


def _rounds() -> list[dict[str, Any]]:
    rng = np.random.default_rng(17)
    u = [rng.normal(size=d) for d in [*DIMS, 7]]
    out: list[dict[str, Any]] = []
    for i in range(N_ROUNDS):
        task = TASKS[int(rng.integers(4))]
        xs = [rng.normal(size=w.shape[0]) for w in u]
        margin = sum(float(w @ x) for w, x in zip(u, xs, strict=True))
        views: dict[str, Any] = {t: x.round(4).tolist() for t, x in zip(TASKS, xs, strict=True)}
        if i % 13 == 1:  # a sparse view
            k = TASKS[(TASKS.index(task) + 1) % 4]
            idx = [j for j, v in enumerate(views[k]) if v > 0]
            views[k] = {"indices": idx, "values": [views[k][j] for j in idx]}
        if i % 17 == 3:  # a task left out
            del views[TASKS[(TASKS.index(task) + 2) % 4]]
        event: dict[str, Any] = {"task": task, "views": views, "ref": f"r{i}"}
        if rng.random() < 0.8:
            event["y"] = 1.0 if margin >= 0 else -1.0
        out.append(event)
    return out


def _send(client: TestClient, model: str, rounds: list[dict[str, Any]]) -> None:
    """The rounds through /events (and every 100th unlabelled one through /predict),
    then a late label for every unlabelled round, and one repeated label."""
    unlabelled: list[str] = []
    for start in range(0, len(rounds), BATCH):
        chunk = rounds[start : start + BATCH]
        if start % (100 * BATCH) == 0:
            one = {k: v for k, v in chunk[0].items() if k != "y"}
            p = client.post("/predict", json={"model": model, **one})
            assert p.status_code == 200, p.text
            unlabelled.append(p.json()["event_id"])
        r = client.post("/events", json={"model": model, "events": chunk})
        assert r.status_code == 202, r.text
        ids = r.json()["event_ids"]
        unlabelled += [eid for eid, e in zip(ids, chunk, strict=True) if "y" not in e]
    for n, eid in enumerate(unlabelled):
        y = -1.0 if n % 3 == 0 else 1.0
        r = client.post("/label", json={"model": model, "event_id": eid, "y": y})
        assert r.status_code == 202, r.text
    again = client.post("/label", json={"model": model, "event_id": unlabelled[0], "y": -1})
    assert again.json()["status"] == "duplicate"


@pytest.mark.slow
def test_api_rounds_survive_sigkill_bit_for_bit(
    client: TestClient, rb: redis.Redis, redis_url: str, settings: Settings
) -> None:
    rounds = _rounds()
    for model in ("a", "b"):
        assert client.put(f"/models/{model}", json=SPEC).status_code == 201
        _send(client, model, rounds)
    n_entries = int(rb.xlen(keys.log_key("a")))
    assert n_entries == int(rb.xlen(keys.log_key("b"))) > N_ROUNDS

    whole = Worker(settings, models=["a"]).run(until_idle=True, timeout=120)
    assert whole.entries == n_entries
    assert whole.dead_letters == 0

    kills, _ = kill_worker_while_it_works(
        redis_url,
        "b",
        "w-mv",
        3,
        np.random.default_rng(99),
        snapshot_every_entries=300,
        snapshot_every_seconds=0.05,
        read_count=50,
        lease_ttl_ms=3000,
    )
    assert kills >= 3, f"only {kills} kills before the worker finished"

    a, b = read_snapshot(rb, "a"), read_snapshot(rb, "b")
    assert a is not None and b is not None
    assert a.last_id == rb.xrevrange(keys.log_key("a"), count=1)[0][0].decode()
    assert b.last_id == rb.xrevrange(keys.log_key("b"), count=1)[0][0].decode()
    assert_same_snapshot(a, b)
    sa = a.learner.state_dict()
    assert int(sa["state.n_mistakes_"]) > 0
    assert a.task_names == TASKS
    n_unlabelled = sum("y" not in e for e in rounds) + N_ROUNDS // (100 * BATCH) + 1
    assert a.totals["labels_applied"] == n_unlabelled == b.labelled.shape[0]
    assert int(a.counters["labels"].sum()) == N_ROUNDS + N_ROUNDS // (100 * BATCH) + 1
    assert rb.xlen(keys.dead_key("a")) == rb.xlen(keys.dead_key("b")) == 0
    # label requests: one per unlabelled round, the same in both, none repeated by a replay
    qa = [f[b"ref"] for _, f in rb.xrange(keys.queries_key("a"))]
    qb = [f[b"ref"] for _, f in rb.xrange(keys.queries_key("b"))]
    assert qa == qb
    assert len(qa) == n_unlabelled
