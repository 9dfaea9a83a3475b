"""Models spread over live workers: rendezvous assignment with bounded loads, hand-off when
workers join or leave, takeover after a kill -9, and no entry applied twice (real Redis,
real workers; the state of every model equals an uninterrupted single-worker run)."""

from __future__ import annotations

import collections
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
import redis

from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event
from service.store.lease import lease_holder
from service.store.models import ModelConfig, put_model
from service.store.snapshot import read_snapshot
from service.worker import Worker
from service.worker.assignment import assign, share
from service.worker.membership import beat, leave
from tests.service.helpers import wait_until, worker_process

CONFIG = ModelConfig(learner="cmtl", n_features=3, tasks=["a", "b"])


# ---------------------------------------------------------------- the assignment itself
@pytest.mark.parametrize(("n", "w"), [(60, 3), (60, 2), (10, 4), (7, 3), (100, 7), (3, 5)])
def test_counts_differ_by_at_most_one(n: int, w: int) -> None:
    models = [f"m{i}" for i in range(n)]
    members = [f"host:{j}" for j in range(w)]
    got = assign(models, members)
    assert sorted(got) == sorted(models)
    counts = collections.Counter(got.values())
    loads = [counts.get(member, 0) for member in members]
    assert max(loads) - min(loads) <= 1
    assert sum(loads) == n


def test_every_member_computes_the_same_assignment_in_any_order() -> None:
    models = [f"m{i}" for i in range(40)]
    members = ["a", "b", "c"]
    one = assign(models, members)
    assert assign(reversed(models), list(reversed(members))) == one
    shares = [share(models, members, me) for me in members]
    assert sorted(m for s in shares for m in s) == sorted(models)  # a partition


def test_a_joining_member_moves_few_models() -> None:
    models = [f"m{i}" for i in range(60)]
    before = assign(models, ["a", "b", "c"])
    after = assign(models, ["a", "b", "c", "d"])
    moved = [m for m in models if before[m] != after[m]]
    # the newcomer takes its 15; few others are reshuffled to keep the counts equal
    assert sum(1 for m in models if after[m] == "d") == 15
    assert len(moved) <= 20


def test_membership_forgets_silent_members(r: redis.Redis) -> None:
    assert beat(r, "w1", 300) == ["w1"]
    assert beat(r, "w2", 300) == ["w1", "w2"]
    assert wait_until(lambda: beat(r, "w2", 300) == ["w2"], timeout=5)  # w1 fell silent
    leave(r, "w2")
    assert r.zcard(keys.workers_key()) == 0


# ---------------------------------------------------------------- real workers
def produce(r: redis.Redis, names: list[str], n: int, seed: int) -> None:
    """Append ``n`` labelled events to each model (a deterministic stream per model)."""
    rng = np.random.default_rng(seed)
    with r.pipeline(transaction=False) as p:
        for name in names:
            for _ in range(n):
                x = rng.normal(size=3)
                y = 1 if x[0] + 0.5 * x[1] > 0 else -1
                p.xadd(keys.log_key(name), encode_event("a" if x[2] > 0 else "b", x, y=y))
        p.execute()


def holders(r: redis.Redis, names: list[str]) -> dict[str, str | None]:
    return {name: lease_holder(r, name) for name in names}


def loads(r: redis.Redis, names: list[str], members: list[str]) -> list[int]:
    owner = holders(r, names)
    return [sum(1 for h in owner.values() if h == m) for m in members]


def balanced(r: redis.Redis, names: list[str], members: list[str]) -> bool:
    counts = loads(r, names, members)
    return sum(counts) == len(names) and max(counts) - min(counts) <= 1


def all_applied(r: redis.Redis, names: list[str]) -> bool:
    """Every model's latest snapshot holds its whole log."""
    for name in names:
        last = r.xrevrange(keys.log_key(name), count=1)
        snap = read_snapshot(r, name)
        if snap is None or not last or snap.last_id != last[0][0].decode():
            return False
    return True


def assert_same_as_one_uninterrupted_run(r: redis.Redis, settings: Settings, name: str) -> None:
    """The model's snapshot equals a fresh model fed the same log by one worker, bit for bit."""
    ref = f"ref-{name}"
    put_model(r, ref, CONFIG)
    with r.pipeline(transaction=False) as p:
        for entry_id, fields in r.xrange(keys.log_key(name)):
            p.xadd(keys.log_key(ref), fields, id=entry_id)
        p.execute()
    Worker(settings, models=[ref]).run(until_idle=True, timeout=60)
    got, want = read_snapshot(r, name), read_snapshot(r, ref)
    assert got is not None and want is not None
    assert got.last_id == want.last_id
    assert got.totals == want.totals  # entries and events: each applied exactly once
    sa, sb = got.learner.state_dict(), want.learner.state_dict()
    assert sa.keys() == sb.keys()
    for key, value in sb.items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(sa[key], value), key
        else:
            assert sa[key] == value, key


@contextmanager
def running(settings: Settings, worker_id: str) -> Iterator[Worker]:
    """A worker serving its share of every model, on a thread, stopped cleanly at exit."""
    worker = Worker(settings, worker_id=worker_id)
    thread = threading.Thread(target=worker.run, name=worker_id, daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(timeout=60)
        worker.close()


def test_three_workers_split_twelve_models_evenly(rb: redis.Redis, settings: Settings) -> None:
    names = [f"m{i:02d}" for i in range(12)]
    for name in names:
        put_model(rb, name, CONFIG)
    members = ["w-a", "w-b", "w-c"]
    with running(settings, "w-a"), running(settings, "w-b"), running(settings, "w-c"):
        assert wait_until(lambda: loads(rb, names, members) == [4, 4, 4], timeout=30)
        # the split is the one every member computes, once the hand-offs are done: loads can
        # be even while two models are still on their way between workers
        expected = assign(names, members)
        wait_until(lambda: holders(rb, names) == expected, timeout=30)
        assert holders(rb, names) == expected
        produce(rb, names, 30, seed=1)
        assert wait_until(lambda: all_applied(rb, names), timeout=30)
    assert rb.zcard(keys.workers_key()) == 0  # clean stops leave the membership


def test_joining_and_leaving_rebalances_without_applying_twice(
    rb: redis.Redis, settings: Settings
) -> None:
    """Two workers, a third joins (models handed off), then one leaves (handed back); events
    flow all along. Each model's state equals one uninterrupted run of its log."""
    names = [f"m{i}" for i in range(6)]
    for name in names:
        put_model(rb, name, CONFIG)
    stop = threading.Event()

    def producer() -> None:
        seed = 0
        while not stop.is_set():
            seed += 1
            produce(rb, names, 5, seed=seed)
            stop.wait(0.02)

    feed = threading.Thread(target=producer, daemon=True)
    feed.start()
    try:
        with running(settings, "w-1"), running(settings, "w-2"):
            assert wait_until(lambda: loads(rb, names, ["w-1", "w-2"]) == [3, 3], timeout=30)
            with running(settings, "w-3"):
                trio = ["w-1", "w-2", "w-3"]
                assert wait_until(lambda: loads(rb, names, trio) == [2, 2, 2], timeout=30)
                assert holders(rb, names) == assign(names, trio)
            # w-3 stopped cleanly: its models go back to the two
            assert wait_until(lambda: loads(rb, names, ["w-1", "w-2"]) == [3, 3], timeout=30)
            stop.set()
            feed.join()
            assert wait_until(lambda: all_applied(rb, names), timeout=60)
    finally:
        stop.set()
        feed.join()
    for name in names:
        assert rb.xlen(keys.log_key(name)) > 50
        assert_same_as_one_uninterrupted_run(rb, settings, name)


@pytest.mark.slow
def test_a_killed_workers_models_are_taken_over_after_its_lease(
    rb: redis.Redis, redis_url: str, settings: Settings
) -> None:
    """Three worker processes share nine models; one is killed with SIGKILL: its three
    models are taken by the other two once its lease and membership lapse, and nothing
    acknowledged is lost or applied twice."""
    names = [f"m{i}" for i in range(9)]
    for name in names:
        put_model(rb, name, CONFIG)
    produce(rb, names, 40, seed=3)
    members = ["p-1", "p-2", "p-3"]
    procs = {
        wid: worker_process(redis_url, "--worker-id", wid, lease_ttl_ms=1000, block_ms=50)
        for wid in members
    }
    try:
        assert wait_until(lambda: balanced(rb, names, members), timeout=60)
        assert wait_until(lambda: all_applied(rb, names), timeout=30)
        victim = "p-2"
        lost = [n for n, h in holders(rb, names).items() if h == victim]
        assert len(lost) == 3
        procs[victim].send_signal(signal.SIGKILL)
        procs[victim].communicate()
        produce(rb, names, 40, seed=4)  # acknowledged while the victim's leases still run
        survivors = ["p-1", "p-3"]
        assert wait_until(lambda: balanced(rb, names, survivors), timeout=30)
        assert holders(rb, names) == assign(names, survivors)
        assert wait_until(lambda: all_applied(rb, names), timeout=30)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            proc.communicate(timeout=60)
    for name in names:
        snap = read_snapshot(rb, name)
        assert snap is not None and snap.totals["events"] == 80  # none lost, none twice
        assert_same_as_one_uninterrupted_run(rb, settings, name)
