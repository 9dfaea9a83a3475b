"""A learner that fails on some entries: the worker quarantines them and keeps going.

The learner (:mod:`bench.faulty_learner`) raises ``RuntimeError`` on a row
starting with ``MAGIC`` after learning the rows before it in the call, as a bug half-way
through a batch would. The log mixes groups of labelled single events, runs of labelled
batch entries, unlabelled events and their labels, and batch entries with unlabelled
rows; a few entries carry a faulty row: a single event inside a group, a batch entry
inside a run, the label of an event whose row is faulty, the second labelled part of a
batch entry (followed by a label for one of its unlabelled rows). The worker must end
with the state of the same log without those entries, bit for bit, the entries
dead-lettered with the learner's error and quarantined, the label of a quarantined
row dead-lettered, and every other entry applied once
(docs/architecture.md, "When the learner fails"). The same holds for a worker killed
with SIGKILL at random points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
import redis
from prometheus_client import REGISTRY

import learners
from bench.faulty_learner import MAGIC, make_faulty
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_batch, encode_event, encode_label
from service.store.failures import read_failed
from service.store.models import ModelConfig, put_model
from service.store.snapshot import read_snapshot
from service.worker import Worker
from service.worker.owned import load_owned
from service.worker.snapshots import trim_log
from tests.service.helpers import assert_same_learner, kill_worker_while_it_works

D = 8
TASKS = ["a", "b", "c"]


@dataclass
class Log:
    """Entries with explicit ids (four per millisecond: labelled single events of one
    millisecond form groups), and the ids of the entries with a faulty row."""

    entries: list[tuple[str, dict[str, bytes | str]]] = field(default_factory=list)
    faulty: list[str] = field(default_factory=list)

    def add(self, fields: dict[str, bytes | str], faulty: bool = False) -> str:
        i = len(self.entries)
        entry_id = f"{1 + i // 4}-{i % 4}"
        self.entries.append((entry_id, fields))
        if faulty:
            self.faulty.append(entry_id)
        return entry_id

    def without_faulty(self) -> list[tuple[str, dict[str, bytes | str]]]:
        left_out = set(self.faulty)
        return [(eid, fields) for eid, fields in self.entries if eid not in left_out]


def build_log(seed: int, n: int, every: int) -> Log:
    """About ``n`` entries with a faulty entry of one of the four kinds every ``every``."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(len(TASKS), D))
    log = Log()
    waiting: list[str] = []  # unlabelled events without their label yet

    def row(magic: bool = False) -> np.ndarray:
        x = rng.normal(size=D).astype(np.float32)
        if magic:
            x[0] = MAGIC
        return x

    def label(t: int, x: np.ndarray) -> int:
        return 1 if float(w[t] @ x) >= 0 else -1

    def batch(n_rows: int, bad_row: int | None, unlabelled: slice | None = None) -> dict:
        ts = [int(rng.integers(len(TASKS))) for _ in range(n_rows)]
        X = np.stack([row(i == bad_row) for i in range(n_rows)])
        ys: list[float | None] = [label(t, x) for t, x in zip(ts, X)]
        if unlabelled is not None:
            ys[unlabelled] = [None] * len(ys[unlabelled])
        return encode_batch([TASKS[t] for t in ts], X, y=ys)

    kind = 0
    while len(log.entries) < n:
        if len(log.entries) % every == every - 1:  # a faulty entry, the kinds in turn
            kind += 1
            if kind % 4 == 1:  # a labelled single event inside a group (one millisecond)
                while len(log.entries) % 4 != 0:
                    waiting.append(log.add(encode_event(TASKS[0], row(), binary=True)))
                for i in range(4):
                    t = int(rng.integers(len(TASKS)))
                    x = row(i == 1)
                    log.add(encode_event(TASKS[t], x, y=label(t, x), binary=True), faulty=i == 1)
            elif kind % 4 == 2:  # a batch entry inside a run of batch entries
                log.add(batch(16, None))
                log.add(batch(16, 7), faulty=True)
                log.add(batch(16, None))
            elif kind % 4 == 3:  # the label of an event whose row is faulty
                eid = log.add(encode_event(TASKS[0], row(True), binary=True))
                log.add(encode_label(eid, 1), faulty=True)
            else:  # the second labelled part of a batch entry with unlabelled rows
                eid = log.add(batch(12, 9, unlabelled=slice(4, 7)), faulty=True)
                log.add(encode_label(f"{eid}/5", 1))  # never applied: dead-lettered
            continue
        u = rng.random()
        t = int(rng.integers(len(TASKS)))
        if u < 0.6:
            x = row()
            log.add(encode_event(TASKS[t], x, y=label(t, x), binary=True))
        elif u < 0.7:
            log.add(batch(16, None))
        elif u < 0.85:
            waiting.append(log.add(encode_event(TASKS[t], row(), binary=True)))
        elif waiting:
            log.add(encode_label(waiting.pop(0), 1 if rng.random() < 0.5 else -1))
    return log


def write(r: redis.Redis, model: str, entries: list[tuple[str, dict[str, bytes | str]]]) -> None:
    for start in range(0, len(entries), 2000):
        with r.pipeline(transaction=False) as p:
            for entry_id, fields in entries[start : start + 2000]:
                p.xadd(keys.log_key(model), fields, id=entry_id)  # type: ignore[arg-type]
            p.execute()


def config(learner: str) -> ModelConfig:
    return ModelConfig(learner=learner, n_features=D, tasks=TASKS, seed=3)


def assert_left_out(rb: redis.Redis, faulty_model: str, clean_model: str, log: Log) -> None:
    """``faulty_model`` holds the state of ``clean_model`` (the log without the faulty
    entries), and the faulty entries are dead-lettered with the learner's error and
    quarantined."""
    faulty, clean = read_snapshot(rb, faulty_model), read_snapshot(rb, clean_model)
    assert faulty is not None and clean is not None
    assert faulty.last_id == log.entries[-1][0]
    assert_same_learner(faulty.learner, clean.learner)
    assert faulty.task_names == clean.task_names
    for name, counts in clean.counters.items():
        assert np.array_equal(counts, faulty.counters[name]), name
    n_faulty = len(log.faulty)
    expected = dict(clean.totals)
    expected["entries"] += n_faulty
    expected["dead_letters"] += n_faulty
    assert faulty.totals == expected
    # the clean model's dead letters (the labels of left-out rows) and the faulty entries,
    # once each, in log order
    reasons = {f[b"entry"].decode(): f[b"reason"] for _, f in rb.xrange(keys.dead_key(clean_model))}
    assert len(reasons) == n_faulty // 4
    assert all(b"unknown or expired event" in reason for reason in reasons.values())
    dead = [(f[b"entry"].decode(), f[b"reason"]) for _, f in rb.xrange(keys.dead_key(faulty_model))]
    order = {entry_id: i for i, (entry_id, _) in enumerate(log.entries)}
    assert [entry_id for entry_id, _ in dead] == sorted([*reasons, *log.faulty], key=order.get)
    for entry_id, reason in dead:
        if entry_id in reasons:
            assert b"was never applied (the learner failed on it)" in reason
        else:
            assert b"the learner failed on this entry: FaultyRow" in reason
    quarantined = rb.hgetall(keys.quarantine_key(faulty_model))
    assert sorted(k.decode() for k in quarantined) == sorted(log.faulty)


def learner_errors(model: str) -> float:
    return REGISTRY.get_sample_value("omtl_learner_errors_total", {"model": model}) or 0.0


@pytest.mark.parametrize("learner", ["cmtl", "adaptive-auto"])
def test_entries_the_learner_fails_on_are_left_out_and_the_rest_applied_once(
    rb: redis.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch, learner: str
) -> None:
    log = build_log(seed=11, n=3000, every=250)
    assert len(log.faulty) == 12
    put_model(rb, "clean", config(learner))
    write(rb, "clean", log.without_faulty())
    clean_run = Worker(settings, models=["clean"]).run(until_idle=True, timeout=60)
    assert clean_run.entries == len(log.entries) - len(log.faulty)

    make_faulty(learner, monkeypatch.setattr)
    put_model(rb, "faulty", config(learner))
    write(rb, "faulty", log.entries)
    errors_before = learner_errors("faulty")
    frequent = settings.model_copy(update={"snapshot_every_entries": 300})
    run = Worker(frequent, models=["faulty"]).run(until_idle=True, timeout=120)

    # every entry counted once, although the entries after a snapshot were replayed
    assert run.entries == len(log.entries)
    assert_left_out(rb, "faulty", "clean", log)
    # one failure per faulty entry, one more where it failed inside a group or a run
    assert len(log.faulty) <= learner_errors("faulty") - errors_before <= 2 * len(log.faulty)


def test_a_refused_row_is_a_dead_letter_unless_rows_of_its_entry_were_applied(
    rb: redis.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A learner refusing a row (``ValueError``, nothing changed) makes a dead letter of a
    single event; in a batch entry whose rows before it were applied (a labelled part
    before unlabelled rows), it quarantines the entry: the state is that of the log
    without it, not one holding its first part."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, D)).astype(np.float32)
    single, split = X[0].copy(), X[1:11].copy()
    single[0] = split[8, 0] = MAGIC
    fields = [
        encode_event(TASKS[i % 3], X[i], y=1 - 2 * (i % 2), binary=True) for i in range(11, 40)
    ]
    refused = encode_event(TASKS[0], single, y=1, binary=True)
    applied_in_part = encode_batch([TASKS[1]] * 10, split, y=[1, -1, 1, None, None, 1, 1, -1, 1, 1])
    fields = [*fields[:10], refused, *fields[10:20], applied_in_part, *fields[20:]]
    log = [(f"{i + 1}-0", f) for i, f in enumerate(fields)]  # the refused 11-0, the batch 22-0

    put_model(rb, "clean", config("cmtl"))
    write(rb, "clean", [e for e in log if e[0] not in ("11-0", "22-0")])  # neither learned
    Worker(settings, models=["clean"]).run(until_idle=True, timeout=60)
    make_faulty("cmtl", monkeypatch.setattr, refuse=True)
    put_model(rb, "faulty", config("cmtl"))
    write(rb, "faulty", log)
    errors_before = learner_errors("faulty")
    Worker(settings, models=["faulty"]).run(until_idle=True, timeout=60)

    faulty, clean = read_snapshot(rb, "faulty"), read_snapshot(rb, "clean")
    assert faulty is not None and clean is not None
    assert_same_learner(faulty.learner, clean.learner)
    assert learner_errors("faulty") - errors_before == 1
    assert rb.hkeys(keys.quarantine_key("faulty")) == [b"22-0"]
    dead = {f[b"entry"]: f[b"reason"] for _, f in rb.xrange(keys.dead_key("faulty"))}
    assert dead.keys() == {b"11-0", b"22-0"}
    assert dead[b"11-0"] == f"ValueError: the row starts with {MAGIC}".encode()
    assert dead[b"22-0"].startswith(b"the learner failed on this entry: ValueError: row 3 ")


def test_the_failures_recorded_leave_with_the_entries_trimmed_from_the_log(
    rb: redis.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trimming the log behind a snapshot drops the quarantined and cut ids of the entries
    it removed (no replay meets them again), in Redis and in the worker's state, and keeps
    those of the entries still there."""
    log = build_log(seed=11, n=3000, every=250)
    order = {entry_id: i for i, (entry_id, _) in enumerate(log.entries)}
    make_faulty("cmtl", monkeypatch.setattr)
    frequent = settings.model_copy(update={"snapshot_every_entries": 300})
    for name in ("trimmed", "untrimmed"):
        put_model(rb, name, config("cmtl"))
        write(rb, name, log.entries)
    Worker(frequent, models=["untrimmed"]).run(until_idle=True, timeout=120)
    trimming = frequent.model_copy(update={"stream_maxlen": 1000})
    Worker(trimming, models=["trimmed"]).run(until_idle=True, timeout=120)

    def recorded(name: str) -> tuple[list[str], set[str]]:
        quarantined = sorted(k.decode() for k in rb.hkeys(keys.quarantine_key(name)))
        return quarantined, {c.decode() for c in rb.smembers(keys.cuts_key(name))}

    all_quarantined, all_cuts = recorded("untrimmed")
    assert all_quarantined == sorted(log.faulty)
    head = rb.xrange(keys.log_key("trimmed"), count=1)[0][0].decode()
    kept = sorted(e for e in log.faulty if order[e] >= order[head])
    assert 0 < len(kept) < len(log.faulty)  # the log was trimmed past some of them
    assert any(order[c] < order[head] for c in all_cuts)  # and past some cuts
    quarantined, cuts = recorded("trimmed")
    assert quarantined == kept
    assert all(order[c] >= order[head] for c in cuts)
    dead = {f[b"entry"].decode() for _, f in rb.xrange(keys.dead_key("trimmed"))}
    assert set(log.faulty) <= dead  # every faulty entry was dead-lettered all the same

    # the worker's own records go with them: trim the untrimmed log as far
    owned = load_owned(rb, "untrimmed")
    assert owned is not None
    assert trim_log(rb, owned, owned.applied_in_log() - order[head]) > 0
    first = order[rb.xrange(keys.log_key("untrimmed"), count=1)[0][0].decode()]
    kept = sorted(e for e in log.faulty if order[e] >= first)
    assert 0 < len(kept) < len(log.faulty)
    assert sorted(k.decode() for k in owned.state.quarantined) == kept == recorded("untrimmed")[0]
    left = {c for c in all_cuts if order[c] >= first}
    assert {c.decode() for c in owned.state.cuts} == left == recorded("untrimmed")[1]
    assert left != all_cuts


@pytest.mark.slow
def test_a_worker_killed_while_the_learner_fails_ends_in_the_same_state(
    rb: redis.Redis, redis_url: str, settings: Settings
) -> None:
    log = build_log(seed=5, n=12_000, every=400)
    put_model(rb, "clean", config("cmtl"))
    write(rb, "clean", log.without_faulty())
    Worker(settings, models=["clean"]).run(until_idle=True, timeout=120)

    put_model(rb, "killed", config("cmtl"))
    write(rb, "killed", log.entries)
    kills, lives = kill_worker_while_it_works(
        redis_url,
        "killed",
        "w-faulty",
        3,
        np.random.default_rng(7),
        module=("bench.faulty_learner", "cmtl"),
        snapshot_every_entries=500,
        snapshot_every_seconds=0.05,
        read_count=100,
        lease_ttl_ms=3000,
    )
    assert kills == 3 and lives == 4
    assert_left_out(rb, "killed", "clean", log)


@pytest.mark.parametrize("where", ["outlier_tasks", "state_dict"])
def test_a_model_whose_serving_fails_is_marked_failed_and_the_others_go_on(
    rb: redis.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """An error out of the entries' application (the learner's outlier report read after
    a read, its state read for a snapshot) marks that model failed, as one that cannot
    be loaded; the worker applies its other models to the end, and counts the failed
    model's work only up to its last snapshot. Once the learner is mended, a worker
    serves the model from that snapshot to the end of its log."""
    log = build_log(seed=2, n=1500, every=10_000)
    for name, learner in (("good", "cmtl"), ("bad", "rom-pgd"), ("reference", "rom-pgd")):
        put_model(rb, name, config(learner))
        write(rb, name, log.entries)
    Worker(settings, models=["reference"]).run(until_idle=True, timeout=60)

    def broken(self: object, *args: object) -> object:
        raise RuntimeError(f"{where} is broken")

    cls = type(learners.make("rom-pgd", n_features=1, n_tasks=1))
    with monkeypatch.context() as patch:
        patch.setattr(cls, where, broken)
        failing = Worker(settings, models=["good", "bad"]).run(until_idle=True, timeout=60)
        # the failed model's work after its last (initial) snapshot is lost, and not counted
        assert failing.entries == len(log.entries)
        good = read_snapshot(rb, "good")
        assert good is not None and good.last_id == log.entries[-1][0]
        failure = read_failed(rb, "bad")
        assert failure is not None
        assert failure.reason == f"while serving it: RuntimeError: {where} is broken"
        assert REGISTRY.get_sample_value("omtl_model_failed", {"model": "bad"}) == 1.0
        assert rb.get(keys.lease_key("bad")) is None  # released for another try

    mended = Worker(settings, models=["bad"]).run(until_idle=True, timeout=60)
    assert mended.entries == len(log.entries)
    assert read_failed(rb, "bad") is None
    bad, reference = read_snapshot(rb, "bad"), read_snapshot(rb, "reference")
    assert bad is not None and reference is not None
    assert bad.last_id == log.entries[-1][0]
    assert_same_learner(bad.learner, reference.learner)


def test_a_model_whose_reload_fails_after_a_learner_failure_counts_only_its_saved_work(
    rb: redis.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The learner fails on an entry and the model's reload from its snapshot fails too:
    the model is marked failed, and the run counts its work only up to that snapshot,
    as for the other drops without a snapshot. The entries after it are counted once,
    by the run that serves the model again from the snapshot."""
    log = build_log(seed=5, n=1500, every=1000)
    assert len(log.faulty) == 1
    put_model(rb, "faulty", config("cmtl"))
    write(rb, "faulty", log.entries)

    def reload_fails(r: object, name: str, limits: object, recorded: object = None) -> object:
        if recorded is not None:  # the rollback's reload, not the first load
            raise RuntimeError("the reload is broken")
        return load_owned(r, name, limits, recorded)  # type: ignore[arg-type]

    rare = settings.model_copy(
        update={"snapshot_every_seconds": 3600.0, "snapshot_every_entries": 10**6}
    )
    with monkeypatch.context() as patch:
        make_faulty("cmtl", patch.setattr)
        patch.setattr("service.worker.worker.load_owned", reload_fails)
        failing = Worker(rare, models=["faulty"]).run(until_idle=True, timeout=60)
        failure = read_failed(rb, "faulty")
        assert failure is not None and "the reload is broken" in failure.reason
        # no snapshot written: nothing of the run is saved, and nothing counted
        assert read_snapshot(rb, "faulty") is None
        assert failing.entries == 0

    mended = Worker(settings, models=["faulty"]).run(until_idle=True, timeout=60)
    assert mended.entries == len(log.entries)
    assert read_failed(rb, "faulty") is None
