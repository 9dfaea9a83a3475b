"""Crash determinism: a worker killed with SIGKILL and restarted ends in the same state.

One log of more than 20,000 entries (single labelled and unlabelled events in
binary and JSON encodings, batch entries with unlabelled rows, annotators'
labels for queried events including repeats and unknown ids, garbage, tasks
appearing late) is written with explicit ids to two models with the same
configuration. The labels answer the label requests a probe worker emitted for
the first 12,000 entries (the same requests both models emit).
Model ``a`` is applied by one uninterrupted worker. Model ``b`` is applied by a
worker process that is killed with SIGKILL at least three times at random
points and restarted each time. The learner is active (selective sampling
around the multitask Perceptron), so every query decision draws from the
learner's generator, which must survive the crashes through the snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
import redis

from service.settings import Settings
from service.store import keys
from service.store.codec import encode_batch, encode_event, encode_label, entry_id_tuple
from service.store.models import ModelConfig, put_model
from service.store.snapshot import read_snapshot
from service.worker import Worker
from tests.service.helpers import assert_same_snapshot, kill_worker_while_it_works

D = 10
TASKS = [f"t{i}" for i in range(6)]
LEARNER = ModelConfig(
    learner="selective-sampling",
    params={"base": "cmtl", "b": 0.5},
    n_features=D,
    tasks=TASKS[:4],
    seed=5,
)


@dataclass
class Log:
    """The entries of the test log and what applying them must do."""

    entries: list[tuple[str, dict[str, bytes | str]]] = field(default_factory=list)
    labelled_by_entry: set[str] = field(default_factory=set)
    dead: set[str] = field(default_factory=set)

    def add(self, fields: dict[str, bytes | str]) -> str:
        i = len(self.entries)
        # several entries share a millisecond: runs of labelled events in one ms form groups
        entry_id = f"{i // 10 + 1}-{i % 10}"
        self.entries.append((entry_id, fields))
        return entry_id


class LogBuilder:
    """Appends deterministic random entries to a :class:`Log` (see the module docstring)."""

    def __init__(self, seed: int, late_tasks_after: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.w = self.rng.normal(size=(len(TASKS), D))
        self.late = late_tasks_after
        self.log = Log()

    def _task(self, i: int) -> int:
        # the last two tasks only appear after a while (add_task during the run)
        return int(self.rng.integers(len(TASKS) if i > self.late else 4))

    def _label(self, t: int, x: np.ndarray) -> int:
        return 1 if float(self.w[t] @ x) >= 0 else -1

    def extend(self, n_entries: int, queried: list[str]) -> Log:
        """Add entries until the log has ``n_entries``; labels answer ``queried`` events."""
        rng, log = self.rng, self.log
        answered: list[str] = []
        while len(log.entries) < n_entries:
            i = len(log.entries)
            u = rng.random()
            if u < 0.62:  # labelled single event
                t = self._task(i)
                x = rng.normal(size=D).astype(np.float32)
                log.add(encode_event(TASKS[t], x, y=self._label(t, x), binary=rng.random() < 0.9))
            elif u < 0.80:  # unlabelled single event
                t = self._task(i)
                x = rng.normal(size=D).astype(np.float32)
                log.add(encode_event(TASKS[t], x, ref=f"r{i}", binary=rng.random() < 0.9))
            elif u < 0.84:  # batch of 20 rows, about a fifth unlabelled
                ts = [self._task(i) for _ in range(20)]
                X = rng.normal(size=(20, D)).astype(np.float32)
                ys: list[float | None] = [
                    None if rng.random() < 0.2 else self._label(t, x) for t, x in zip(ts, X)
                ]
                log.add(encode_batch([TASKS[t] for t in ts], X, y=ys))
            elif u < 0.99:  # an annotator's answer to a label request (sometimes a repeat)
                if answered and rng.random() < 0.05:
                    target = answered[int(rng.integers(len(answered)))]
                elif queried:
                    target = queried.pop(int(rng.integers(min(20, len(queried)))))
                else:
                    continue
                y = 1 if rng.random() < 0.5 else -1
                eid = log.add(encode_label(target, y, annotator="sim"))
                if target in log.labelled_by_entry:
                    log.dead.add(eid)
                else:
                    log.labelled_by_entry.add(target)
                    answered.append(target)
            elif u < 0.995:  # a label for an event that is not in the log
                log.dead.add(log.add(encode_label(f"0-{int(rng.integers(1, 9))}", 1)))
            else:  # garbage
                log.dead.add(log.add({"k": "e", "task": "t0", "x32": b"\x00\x01\x02"}))
        return log


def write_log(r: redis.Redis, model: str, log: Log) -> None:
    for start in range(0, len(log.entries), 2000):
        with r.pipeline(transaction=False) as p:
            for entry_id, fields in log.entries[start : start + 2000]:
                p.xadd(keys.log_key(model), fields, id=entry_id)  # type: ignore[arg-type]
            p.execute()


def _ids(r: redis.Redis, key: str, name: bytes) -> list[str]:
    return [f[name].decode() for _, f in r.xrange(key)]


@pytest.mark.slow
def test_sigkill_and_restart_gives_the_state_of_an_uninterrupted_run(
    rb: redis.Redis, redis_url: str, settings: Settings
) -> None:
    # phase 1: events only; a probe worker finds which events the active learner queries
    builder = LogBuilder(seed=7, late_tasks_after=6_000)
    first = builder.extend(12_000, queried=[])
    put_model(rb, "probe", LEARNER)
    write_log(rb, "probe", first)
    Worker(settings, models=["probe"]).run(until_idle=True, timeout=120)
    requests = _ids(rb, keys.queries_key("probe"), b"event")
    assert len(requests) > 500
    # phase 2: more events, and the annotators' answers to those label requests
    log = builder.extend(20_400, queried=list(requests))
    assert len(log.entries) >= 20_000
    assert len(log.labelled_by_entry) > 500
    for model in ("a", "b"):
        put_model(rb, model, LEARNER)
        write_log(rb, model, log)

    # --- uninterrupted run
    result = Worker(settings, models=["a"]).run(until_idle=True, timeout=120)
    assert result.entries == len(log.entries)

    # --- the same log, with the worker killed at random points
    # the last entry id of the snapshot each kill left behind, as (ms, seq): ten entries
    # share a millisecond, and a life on a loaded machine may snapshot within one
    killed_at: list[tuple[int, int]] = []

    def note_kill() -> None:
        killed_at.append(entry_id_tuple(str(read_snapshot(rb, "b").last_id)))  # type: ignore[union-attr]

    kills, lives = kill_worker_while_it_works(
        redis_url,
        "b",
        "w-crash",
        4,
        np.random.default_rng(2024),
        note_kill,
        snapshot_every_entries=500,
        snapshot_every_seconds=0.05,
        read_count=100,
        lease_ttl_ms=3000,
    )
    assert kills >= 3, f"only {kills} kills before the worker finished"
    assert lives >= 4
    # every life made progress, and every kill hit the middle of the log
    assert killed_at == sorted(set(killed_at))
    assert killed_at[-1] < entry_id_tuple(log.entries[-1][0])

    a, b = read_snapshot(rb, "a"), read_snapshot(rb, "b")
    assert a is not None
    assert b is not None
    assert b.last_id == a.last_id == log.entries[-1][0]
    # the learner (array by array, bit for bit), task names, counters and totals
    assert_same_snapshot(a, b)
    assert a.task_names == TASKS

    # labels: each applied exactly once, none lost, repeats and unknown ids dead-lettered
    def as_ids(snap_labelled: np.ndarray) -> set[str]:
        return {
            f"{ms}-{seq}" if row < 0 else f"{ms}-{seq}/{row}"
            for ms, seq, row in snap_labelled.tolist()
        }

    assert as_ids(a.labelled) == as_ids(b.labelled) == log.labelled_by_entry
    assert a.totals["labels_applied"] == len(log.labelled_by_entry)
    assert set(_ids(rb, keys.dead_key("a"), b"entry")) == log.dead
    dead_b = _ids(rb, keys.dead_key("b"), b"entry")
    assert sorted(dead_b) == sorted(log.dead)  # no dead letter written twice after a replay
    # label requests: the same decisions in the same order, none repeated by a replay
    queries_a = _ids(rb, keys.queries_key("a"), b"event")
    assert queries_a == _ids(rb, keys.queries_key("b"), b"event")
    assert len(set(queries_a)) == len(queries_a) == a.totals["label_requests"]
    # the active rule asks for some labels, not all; the probe saw the same first phase
    assert queries_a[: len(requests)] == requests
    assert len(queries_a) < len(log.entries)
