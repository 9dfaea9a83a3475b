"""No acknowledged write is ever lost: producers faster than a paused worker get 429 with
Retry-After instead of being trimmed away, the log is trimmed only behind the worker's
snapshot, and the labels hash is trimmed with it (real app, real Redis, real worker)."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event
from service.store.snapshot import read_snapshot
from service.worker import Worker

BOUND, KEEP = 300, 50


@pytest.fixture
def tight(api_settings: Settings) -> Settings:
    """A backlog bound of 300 entries and 50 applied entries kept for labels."""
    return api_settings.model_copy(
        update={"max_backlog": BOUND, "stream_maxlen": KEEP, "snapshot_every_entries": 100}
    )


def _backlog(rb: redis.Redis, model: str = "default") -> int:
    """The backlog as the README tells direct producers to compute it."""
    applied, generation = rb.hmget(keys.progress_key(model), ["applied", "generation"])
    current = rb.hget(keys.config_key(model), "generation")
    done = int(applied) if applied is not None and generation == current else 0
    return int(rb.xlen(keys.log_key(model))) - done


def _events_applied(rb: redis.Redis, model: str = "default") -> int:
    snap = read_snapshot(rb, model)
    assert snap is not None
    return int(snap.totals["events"])


def test_a_paused_worker_means_429_never_a_lost_event(tight: Settings, rb: redis.Redis) -> None:
    """1,500 single-event /predict calls against a paused worker (bound 300, keep 50): every
    answer is 200 or 429 with Retry-After, the log holds every acknowledged event, and the
    worker then applies exactly the acknowledged events; the log is trimmed behind it."""
    rng = np.random.default_rng(0)
    with TestClient(create_app(tight)) as client:
        statuses: list[int] = []
        for i in range(1500):
            x = rng.normal(size=3).tolist()
            r = client.post("/predict", json={"task": f"t{i % 3}", "x": x})
            statuses.append(r.status_code)
            if r.status_code == 429:
                assert r.headers["retry-after"] == "1"
                assert "not applied" in r.json()["detail"]
        acknowledged = statuses.count(200)
        assert acknowledged + statuses.count(429) == 1500
        assert acknowledged == BOUND  # exact: one writer, the script checks every append
        assert int(rb.xlen(keys.log_key("default"))) == acknowledged
        # a scoring-only request is not an append: never refused
        assert (
            client.post("/predict", json={"task": "t0", "x": [1, 0, 0], "learn": False}).status_code
            == 200
        )

        result = Worker(tight, models=["default"]).run(until_idle=True, timeout=60)
        assert result.events == acknowledged
        assert result.dead_letters == 0
        assert _events_applied(rb) == acknowledged
        assert _backlog(rb) == 0
        # trimmed behind the snapshot: about KEEP applied entries stay (whole nodes of 100)
        assert KEEP <= int(rb.xlen(keys.log_key("default"))) <= KEEP + 100
        assert client.post("/predict", json={"task": "t0", "x": [1, 0, 0]}).status_code == 200


def test_direct_producers_beyond_retention_are_never_trimmed(
    tight: Settings, rb: redis.Redis
) -> None:
    """2,000 direct XADDs (ten times the bound, forty times the retention) with no worker:
    nothing trims them; the worker applies all 2,000; the backlog a producer computes goes
    from 2,000 to 0 and the API refuses appends while it is over the bound."""
    with TestClient(create_app(tight)) as client:
        log = keys.log_key("default")
        for i in range(2000):
            rb.xadd(log, encode_event("a", [float(i), 1.0, 0.0], y=1.0 if i % 2 else -1.0))
        assert _backlog(rb) == 2000
        r = client.post("/events", json={"events": [{"task": "a", "x": [1, 2, 3]}]})
        assert r.status_code == 429
        assert r.headers["retry-after"] == "1"
        Worker(tight, models=["default"]).run(until_idle=True, timeout=60)
        assert _events_applied(rb) == 2000
        assert _backlog(rb) == 0
        again = client.post("/events", json={"events": [{"task": "a", "x": [1, 2, 3]}]})
        assert again.status_code == 202


def test_the_labels_hash_is_trimmed_with_the_log(tight: Settings, rb: redis.Redis) -> None:
    """400 labelled events, then 40 more: once the worker trims the log (keeping 100 applied
    entries), the labels of the trimmed events leave the labels hash, a label for a trimmed
    event is 404, and a kept event's label still answers duplicate."""
    keep = tight.model_copy(update={"stream_maxlen": 100})

    def predict_and_label(client: TestClient, n: int) -> list[str]:
        ids = []
        for i in range(n):
            r = client.post("/predict", json={"task": "a", "x": [float(i), 1.0, 0.0]})
            assert r.status_code == 200
            ids.append(r.json()["event_id"])
        for event_id in ids:
            r = client.post("/label", json={"event_id": event_id, "y": 1})
            assert (r.status_code, r.json()["status"]) == (202, "accepted")
        Worker(keep, models=["default"]).run(until_idle=True, timeout=60)
        return ids

    with TestClient(create_app(keep)) as client:
        old = [i for _ in range(4) for i in predict_and_label(client, 100)]
        new = predict_and_label(client, 40)
        assert int(rb.hlen(keys.labels_key("default"))) == 40
        assert client.post("/label", json={"event_id": old[-1], "y": 1}).status_code == 404
        r = client.post("/label", json={"event_id": new[0], "y": 1})
        assert (r.status_code, r.json()["status"]) == (202, "duplicate")
