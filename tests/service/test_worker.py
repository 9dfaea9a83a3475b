"""The worker against a real Redis: applying events, batches and labels, dead letters,
expired labels, outlier alerts, several models, SIGTERM drain, lease takeover."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import numpy as np
import pytest
import redis

import learners
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_batch, encode_event, encode_label
from service.store.lease import lease_holder
from service.store.models import ModelConfig, put_model
from service.store.snapshot import read_snapshot, read_version
from service.worker import Worker
from tests.service.helpers import wait_until, worker_process

LOG = keys.log_key


def _stream(r: redis.Redis, key: str) -> list[dict[str, str]]:
    return [{k.decode(): v.decode() for k, v in f.items()} for _, f in r.xrange(key)]


def test_events_batches_and_labels_match_a_direct_run_of_the_learner(
    rb: redis.Redis, settings: Settings
) -> None:
    """The snapshot equals the learner driven by hand with the same calls in log order."""
    put_model(rb, "m", ModelConfig(learner="cmtl", n_features=3, tasks=["a", "b"]))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(8, 3)).astype(np.float32)
    e0 = rb.xadd(LOG("m"), encode_event("a", X[0], y=1, binary=True)).decode()
    e1 = rb.xadd(LOG("m"), encode_event("b", X[1], ref="doc-1", binary=True)).decode()
    rb.xadd(LOG("m"), encode_event("new", X[2].tolist(), y=-1))
    e3 = rb.xadd(LOG("m"), encode_batch(["a", "b", "a", "new"], X[3:7], y=[1, -1, None, 1]))
    e3 = e3.decode()
    rb.xadd(LOG("m"), encode_label(e1, -1, annotator="ann"))
    rb.xadd(LOG("m"), encode_label(f"{e3}/2", 1))
    rb.xadd(LOG("m"), encode_label(e1, 1))  # a second label for e1: dead letter
    rb.xadd(LOG("m"), encode_label(e0, -1))  # e0 came with its label: dead letter

    result = Worker(settings, models=["m"]).run(until_idle=True, timeout=30)
    assert result.entries == 8
    assert result.events == 7
    assert result.labels_applied == 2
    assert result.dead_letters == 2

    ref = learners.make("cmtl", n_features=3, n_tasks=2)
    x = X.astype(np.float64)
    mistakes = [0, 0, 0]

    def learn(xi: np.ndarray, yi: float, t: int) -> float:
        """Predict, then learn: every label is scored just before it is learned."""
        score = ref.decision_one(xi, t)
        mistakes[t] += int((score >= 0.0) != (yi > 0.0))
        ref.learn_one(xi, yi, t)
        return score

    s0 = learn(x[0], 1, 0)
    s1 = ref.decision_one(x[1], 1)
    ref.add_task()
    learn(x[2], -1, 2)
    batch_y, batch_t = np.array([1.0, -1.0]), np.array([0, 1])
    batch_scores = ref.score_and_learn_many(x[3:5], batch_y, batch_t)
    for score, yi, t in zip(batch_scores, batch_y, batch_t, strict=True):
        mistakes[t] += int((score >= 0.0) != (yi > 0.0))
    s_row2 = ref.decision_one(x[5], 0)
    learn(x[6], 1, 2)
    learn(x[1], -1, 1)  # the label entry for e1, scored when it is applied
    learn(x[5], 1, 0)  # the label entry for row 2 of the batch

    snap = read_snapshot(rb, "m")
    assert snap is not None
    assert snap.task_names == ["a", "b", "new"]
    for key, value in ref.state_dict().items():
        got = snap.learner.state_dict()[key]
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(got, value, err_msg=key)
        else:
            assert got == value, key
    assert snap.counters["events"].tolist() == [3, 2, 2]
    assert snap.counters["labels"].tolist() == [3, 2, 2]  # labelled events + applied labels
    assert snap.counters["queries"].tolist() == [1, 1, 0]
    assert snap.counters["predictions"].tolist() == [3, 2, 2]
    # online mistakes, labels posted later included: score 0 predicts +1, so e0 (y=+1) is
    # right and e2 (y=-1, score 0, a new task) is wrong
    assert s0 == 0.0
    assert mistakes[2] >= 1
    assert snap.counters["mistakes"].tolist() == mistakes

    requests = _stream(rb, keys.queries_key("m"))
    assert [q["event"] for q in requests] == [e1, f"{e3}/2"]
    assert requests[0]["task"] == "b"
    assert requests[0]["ref"] == "doc-1"
    assert float(requests[0]["score"]) == pytest.approx(s1)
    assert float(requests[1]["score"]) == pytest.approx(s_row2)
    assert requests[0]["p"] == ""  # cmtl has no query probability
    dead = _stream(rb, keys.dead_key("m"))
    assert [d["reason"] for d in dead] == [
        f"event {e1} already has a label",
        f"event {e0} already has a label",
    ]


def test_garbage_goes_to_dead_letters_while_good_entries_apply(
    rb: redis.Redis, settings: Settings
) -> None:
    put_model(rb, "m", ModelConfig(learner="ipl", n_features=2, tasks=["a"]))
    good = 0
    garbage = [
        {"k": "e", "task": "a", "x32": b"\x00\x00"},
        {"k": "e", "task": "a", "x": "[1, 2, 3]"},
        {"k": "e", "task": "a", "x": "[1, 2]", "y": "0.5"},  # not a classification label
        {"k": "b", "n": "2", "task": "a", "X32": b"\x00" * 4},
        {"k": "l", "event": "not-an-id", "y": "1"},
        {"nothing": "here"},
        {"k": "e", "task": "a", "x32": np.array([np.inf, 1], "<f4").tobytes(), "y": "1"},
    ]
    for bad in garbage:
        rb.xadd(LOG("m"), encode_event("a", [1.0, -1.0], y=1, binary=True))
        rb.xadd(LOG("m"), bad)  # type: ignore[arg-type]
        good += 1
    result = Worker(settings, models=["m"]).run(until_idle=True, timeout=30)
    assert result.events == good
    assert result.dead_letters == len(garbage)
    dead = _stream(rb, keys.dead_key("m"))
    reasons = [d["reason"] for d in dead]
    assert "multiple of 4" in reasons[0]
    assert "expected 2" in reasons[1]
    assert "-1 or +1" in reasons[2]
    assert "not n * d" in reasons[3]
    assert "not an event id" in reasons[4]
    assert "unknown entry kind" in reasons[5]
    assert "NaN or infinite" in reasons[6]
    # the original fields are kept, binary values in base64
    assert json.loads(dead[0]["fields"])["x32"] == {"base64": "AAA="}
    snap = read_snapshot(rb, "m")
    assert snap is not None
    assert snap.counters["events"].tolist() == [good]
    assert snap.totals["dead_letters"] == len(garbage)


def test_labels_for_trimmed_or_unknown_events_are_dead_lettered(
    rb: redis.Redis, settings: Settings
) -> None:
    put_model(rb, "m", ModelConfig(learner="cmtl", n_features=2, tasks=["a"]))
    old = rb.xadd(LOG("m"), encode_event("a", [1.0, 2.0], binary=True)).decode()
    kept = rb.xadd(LOG("m"), encode_event("a", [2.0, 1.0], binary=True)).decode()
    Worker(settings, models=["m"]).run(until_idle=True, timeout=30)
    rb.xtrim(LOG("m"), minid=kept, approximate=False)  # retention removed the first event
    rb.xadd(LOG("m"), encode_label(old, 1))
    rb.xadd(LOG("m"), encode_label(kept, -1))
    rb.xadd(LOG("m"), encode_label(f"{kept}/0", -1))  # a row of a single event
    rb.xadd(LOG("m"), encode_label("99999999999999-0", 1))  # later than the label itself
    # a new worker: nothing in memory, the events are read back from the log
    result = Worker(settings, models=["m"]).run(until_idle=True, timeout=30)
    assert result.labels_applied == 1
    assert result.dead_letters == 3
    reasons = [d["reason"] for d in _stream(rb, keys.dead_key("m"))]
    assert reasons[0] == f"unknown or expired event {old}: not in the log"
    assert reasons[1] == f"event {kept} is a single event, it has no row 0"
    assert reasons[2].startswith("unknown event 99999999999999-0")
    snap = read_snapshot(rb, "m")
    assert snap is not None
    assert snap.labelled.tolist() == [[int(kept.split("-")[0]), int(kept.split("-")[1]), -1]]


def test_outlier_alerts_follow_the_learners_outlier_tasks(
    rb: redis.Redis, settings: Settings
) -> None:
    put_model(
        rb,
        "rom",
        ModelConfig(
            learner="rom-pgd",
            n_features=5,
            tasks=["t0", "t1", "t2", "t3"],
            params={"outlier_threshold": 0.4, "outlier_rule": "absolute"},
        ),
    )
    rng = np.random.default_rng(0)
    for i in range(200):
        x = rng.normal(size=5)
        t = i % 4
        y = (1 if x[0] > 0 else -1) * (-1 if t == 3 else 1)
        rb.xadd(LOG("rom"), encode_event(f"t{t}", x, y=y, binary=True))
    Worker(settings.model_copy(update={"read_count": 10}), models=["rom"]).run(
        until_idle=True, timeout=30
    )
    snap = read_snapshot(rb, "rom")
    assert snap is not None
    final = {snap.task_names[t] for t in snap.learner.outlier_tasks()}  # type: ignore[attr-defined]
    alerts = _stream(rb, keys.alerts_key("rom"))
    assert alerts, "the outlier set changed at least once"
    replayed: set[str] = set()
    for alert in alerts:
        assert alert["kind"] in ("outlier", "inlier")
        if alert["kind"] == "outlier":
            assert alert["task"] not in replayed
            replayed.add(alert["task"])
        else:
            replayed.remove(alert["task"])
    assert replayed == final


def test_one_worker_serves_every_model(rb: redis.Redis, settings: Settings) -> None:
    for name in ("m1", "m2", "m3"):
        put_model(rb, name, ModelConfig(learner="stl", n_features=2))
        for i in range(5 if name != "m2" else 12):
            rb.xadd(LOG(name), encode_event(f"t{i % 2}", [1.0, float(i)], y=1, binary=True))
    result = Worker(settings).run(until_idle=True, timeout=30)
    assert sorted(result.models) == ["m1", "m2", "m3"]
    assert result.events == 22
    for name, n in (("m1", 5), ("m2", 12), ("m3", 5)):
        snap = read_snapshot(rb, name)
        assert snap is not None
        assert int(snap.counters["events"].sum()) == n
        assert rb.exists(keys.lease_key(name)) == 0  # released on a clean stop


def test_sigterm_drains_snapshots_and_releases_the_lease(rb: redis.Redis, redis_url: str) -> None:
    put_model(rb, "m", ModelConfig(learner="cmtl", n_features=2))
    proc = worker_process(
        redis_url,
        "--model",
        "m",
        "--worker-id",
        "w-term",
        snapshot_every_entries=1_000_000,
        snapshot_every_seconds=3600,
        block_ms=100,
    )
    try:
        assert wait_until(lambda: lease_holder(rb, "m") == "w-term", timeout=30)
        ids = [rb.xadd(LOG("m"), encode_event("a", [1.0, 2.0], binary=True)) for _ in range(50)]
        # every event was applied (one label request each) but no snapshot is due yet
        assert wait_until(lambda: rb.xlen(keys.queries_key("m")) == 50, timeout=30)
        assert read_version(rb, "m") is None
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    snap = read_snapshot(rb, "m")
    assert snap is not None
    assert snap.version == 1
    assert snap.last_id == ids[-1].decode()
    assert rb.exists(keys.lease_key("m")) == 0


def test_a_second_worker_takes_over_when_the_lease_expires(
    rb: redis.Redis, redis_url: str, settings: Settings
) -> None:
    put_model(rb, "m", ModelConfig(learner="cmtl", n_features=2))
    first = worker_process(
        redis_url, "--model", "m", "--worker-id", "w-first", lease_ttl_ms=2000, block_ms=100
    )
    second = Worker(settings.model_copy(update={"lease_ttl_ms": 2000}), ["m"], "w-second")
    thread = threading.Thread(target=second.run, daemon=True)
    try:
        assert wait_until(lambda: lease_holder(rb, "m") == "w-first", timeout=30)
        thread.start()
        for _ in range(20):
            rb.xadd(LOG("m"), encode_event("a", [1.0, -1.0], y=1, binary=True))
        assert wait_until(lambda: (read_version(rb, "m") or 0) >= 1, timeout=30)
        # the second worker waits while the first one renews its lease
        assert not wait_until(lambda: lease_holder(rb, "m") != "w-first", timeout=1.0)
        first.send_signal(signal.SIGKILL)
        first.communicate()
        # ... and takes over once the lease has expired
        assert wait_until(lambda: lease_holder(rb, "m") == "w-second", timeout=10)
        last = rb.xadd(LOG("m"), encode_event("a", [1.0, -1.0], y=1, binary=True)).decode()

        def applied() -> bool:
            snap = read_snapshot(rb, "m")
            return snap is not None and snap.last_id == last

        assert wait_until(applied, timeout=30)
    finally:
        second.stop()
        thread.join(timeout=30)
        if first.poll() is None:
            first.kill()
            first.communicate()
    snap = read_snapshot(rb, "m")
    assert snap is not None
    assert int(snap.counters["events"].sum()) == 21  # each event applied once, none lost
    assert snap.totals["entries"] == 21


def test_reconfiguring_a_model_restarts_it_afresh(rb: redis.Redis, settings: Settings) -> None:
    put_model(rb, "m", ModelConfig(learner="cmtl", n_features=2))
    worker = Worker(settings, ["m"], "w-gen")
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        for _ in range(5):
            rb.xadd(LOG("m"), encode_event("a", [1.0, -1.0], y=1, binary=True))
        assert wait_until(lambda: (read_version(rb, "m") or 0) >= 1, timeout=30)
        cfg = put_model(rb, "m", ModelConfig(learner="ipl", n_features=3, tasks=["x"]))
        last = rb.xadd(LOG("m"), encode_event("x", [1.0, 1.0, 1.0], y=-1, binary=True)).decode()

        def fresh() -> bool:
            snap = read_snapshot(rb, "m")
            return snap is not None and snap.last_id == last

        assert wait_until(fresh, timeout=30)
    finally:
        worker.stop()
        thread.join(timeout=30)
    snap = read_snapshot(rb, "m")
    assert snap is not None
    assert snap.generation == cfg.generation
    assert snap.learner.name == "ipl"
    assert snap.counters["events"].tolist() == [1]


def test_an_unreadable_snapshot_is_reported_and_other_models_go_on(
    rb: redis.Redis, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("bad", "good"):
        put_model(rb, name, ModelConfig(learner="cmtl", n_features=2))
        rb.xadd(LOG(name), encode_event("a", [1.0, 2.0], y=1, binary=True))
    rb.hset(keys.snapshot_key("bad"), mapping={"version": 3, "header": "{", "arrays": b""})
    result = Worker(settings).run(until_idle=True, timeout=30)
    assert result.models == ["good"]
    assert result.events == 1
    assert "cannot load model 'bad'" in caplog.text
    assert rb.hget(keys.snapshot_key("bad"), "header") == b"{"  # left alone for an operator
    assert rb.exists(keys.lease_key("bad")) == 0


def test_the_worker_survives_a_redis_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The server stops and comes back on the same port and data: the worker reloads the
    model from its snapshot, replays, and every event is applied exactly once."""
    server = EmbeddedRedis(tmp_path).start()
    port = server.port
    settings = Settings(redis_url=server.url, block_ms=50, snapshot_every_seconds=0.1)
    r = redis.Redis.from_url(server.url)
    put_model(r, "m", ModelConfig(learner="cmtl", n_features=2))
    worker = Worker(settings, ["m"], "w-survivor")
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        for _ in range(10):
            r.xadd(LOG("m"), encode_event("a", [1.0, -1.0], y=1, binary=True))
        assert wait_until(lambda: (read_version(r, "m") or 0) >= 1, timeout=30)
        assert server.stop() == 0
        # the outage outlasts the client's own retries: the worker notices it
        assert wait_until(lambda: "lost Redis" in caplog.text, timeout=60)
        server = EmbeddedRedis(tmp_path, port=port).start()
        r = redis.Redis.from_url(server.url)
        last = b""
        for _ in range(10):
            last = r.xadd(LOG("m"), encode_event("a", [1.0, -1.0], y=-1, binary=True))

        def caught_up() -> bool:
            snap = read_snapshot(r, "m")
            return snap is not None and snap.last_id == last.decode()

        assert wait_until(caught_up, timeout=30)
        assert thread.is_alive()
    finally:
        worker.stop()
        thread.join(timeout=30)
        server.stop()
    assert not thread.is_alive()
    with EmbeddedRedis(tmp_path) as again:
        snap = read_snapshot(redis.Redis.from_url(again.url), "m")
        assert snap is not None
        assert snap.counters["events"].tolist() == [20]


def test_worker_metrics_follow_the_counters_with_capped_task_labels(
    rb: redis.Redis, settings: Settings
) -> None:
    from prometheus_client import REGISTRY

    model = "metrics-model"
    put_model(rb, model, ModelConfig(learner="ipl", n_features=2))
    for task, n in (("a", 3), ("b", 2), ("c", 4), ("d", 1)):
        for _ in range(n):
            rb.xadd(LOG(model), encode_event(task, [1.0, 0.5], y=-1, binary=True))
    rb.xadd(LOG(model), encode_event("a", [1.0, 0.5], binary=True))  # one label request
    rb.xadd(LOG(model), {"k": "?"})  # one dead letter
    worker = Worker(settings.model_copy(update={"task_label_cap": 2}), [model])
    worker.run(until_idle=True, timeout=30)

    def value(name: str, **labels: str) -> float | None:
        return REGISTRY.get_sample_value(name, {"model": model, **labels})

    assert value("omtl_events_total", task="a") == 4
    assert value("omtl_events_total", task="b") == 2
    assert value("omtl_events_total", task="other") == 5  # c and d share one series
    assert value("omtl_events_total", task="c") is None
    assert value("omtl_labels_total", task="a") == 3
    # ipl scores 0 before its first update and predicts +1, so each task's first -1 is wrong
    assert value("omtl_online_mistakes_total", task="a") == 1
    assert value("omtl_online_mistakes_total", task="other") == 2
    assert value("omtl_label_requests_total", task="a") == 1
    assert value("omtl_dead_letters_total") == 1
    assert value("omtl_worker_entries_total") == 12
    assert value("omtl_log_lag_entries") == 0
    assert value("omtl_snapshot_version") == 1
    assert value("omtl_lease_owner", worker=worker.id) == 0  # released at the end
