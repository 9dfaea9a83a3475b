"""``kill -9`` of the Redis server under live traffic loses no acknowledged event.

``omtl up`` runs the embedded server with ``appendfsync always`` (the default of
``OMTL_REDIS_APPENDFSYNC``): the server fsyncs its append-only file before it
replies, so an event whose ``/predict`` or ``/events`` answer arrived is on disk.
Four producers send events without pause while the server is killed three
times; ``omtl up`` starts it again on the same port and data directory, the API
answers 503 while it is away, the worker drops its models and reloads them from
their snapshots. Afterwards every acknowledged event is in the log, the worker
has applied every entry of the log, and its state is bit-identical to the same
log applied by one uninterrupted worker (docs/architecture.md, "Durability of
acknowledged writes").
"""

from __future__ import annotations

import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import httpx2 as httpx
import numpy as np
import pytest
import redis

from service.embedded_redis import EmbeddedRedis, free_port
from service.settings import Settings
from service.store import keys
from service.store.durability import read_durability
from service.store.models import get_model, put_model
from service.store.snapshot import read_snapshot
from service.worker import Worker
from tests.service.helpers import (
    api_ready,
    assert_same_snapshot,
    children,
    reap,
    stop_gracefully,
    up_process,
    wait_until,
)

KILLS = 3
ACKS_BETWEEN_KILLS = 150


def _server_port(pid: int) -> int:
    """The port in the server's process title (``valkey-server 127.0.0.1:PORT``)."""
    title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    found = re.search(r"127\.0\.0\.1:(\d+)", title)
    assert found is not None, title
    return int(found.group(1))


class Producers:
    """Threads that send ``/predict`` and labelled ``/events`` calls and keep the acknowledged ids."""

    def __init__(self, base: str, n: int = 4) -> None:
        self.base = base
        self.acked: list[str] = []
        self.refused: dict[int, int] = {}
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(s,)) for s in range(n)]

    def _run(self, seed: int) -> None:
        g = np.random.default_rng(seed)
        with httpx.Client(timeout=10) as http:
            while not self.stop.is_set():
                event: dict[str, Any] = {
                    "task": f"t{g.integers(4)}",
                    "x": g.normal(size=3).round(3).tolist(),
                }
                try:
                    if g.random() < 0.5:
                        r = http.post(f"{self.base}/predict", json=event)
                        ids = [r.json()["event_id"]] if r.status_code == 200 else []
                    else:
                        event["y"] = float(g.choice([-1.0, 1.0]))
                        r = http.post(f"{self.base}/events", json={"events": [event]})
                        ids = r.json()["event_ids"] if r.status_code == 202 else []
                    status = r.status_code
                except httpx.HTTPError:
                    ids, status = [], 0
                with self.lock:
                    if ids:
                        self.acked.extend(ids)
                    else:
                        self.refused[status] = self.refused.get(status, 0) + 1
                if not ids:
                    self.stop.wait(0.02)

    def count(self) -> int:
        with self.lock:
            return len(self.acked)

    def __enter__(self) -> Producers:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


@pytest.mark.slow
def test_sigkills_of_the_server_lose_no_acknowledged_event(
    tmp_path: Path, settings: Settings
) -> None:
    data = tmp_path / "data"
    api_port = free_port()
    proc = up_process(
        data,
        api_port=api_port,
        worker_metrics_port=free_port(),
        default_n_features=3,
        default_learner="cmtl",
        log_level="warning",
        redis_timeout_s=2,
        snapshot_every_seconds=0.2,
    )
    base = f"http://127.0.0.1:{api_port}"
    http = httpx.Client(timeout=10)

    killed: list[int] = []
    try:
        assert wait_until(lambda: api_ready(http, base), timeout=90, interval=0.1), (
            "the API never became ready"
        )
        durability = http.get(f"{base}/health/ready").json()["durability"]
        assert durability == {
            "appendonly": "yes",
            "appendfsync": "always",
            "acknowledged_writes_survive_a_server_crash": True,
        }
        with Producers(base) as producers:
            for _ in range(KILLS):
                target = producers.count() + ACKS_BETWEEN_KILLS
                assert wait_until(lambda t=target: producers.count() >= t, 60, 0.05)  # type: ignore[misc]
                (server_pid,) = children(proc.pid, "-server ")
                os.kill(server_pid, signal.SIGKILL)
                killed.append(server_pid)
                assert wait_until(
                    lambda p=server_pid: children(proc.pid, "-server ") not in ([], [p]), 30
                )
            target = producers.count() + ACKS_BETWEEN_KILLS
            assert wait_until(lambda: producers.count() >= target, 60, 0.05)
        acked = list(producers.acked)
        (server_pid,) = children(proc.pid, "-server ")
        r = redis.Redis(port=_server_port(server_pid))
        log_len = lambda: int(r.xlen(keys.log_key("default")))  # noqa: E731
        snap_events = lambda: (s := read_snapshot(r, "default")) and int(s.totals["events"])  # noqa: E731
        assert wait_until(lambda: snap_events() == log_len(), 90, 0.1), (snap_events(), log_len())
        r.close()
        _, err = stop_gracefully(proc)
    finally:
        http.close()
        reap(proc)
    assert proc.returncode == 0, err
    # the requests that were not acknowledged while the server was away were refused
    assert set(producers.refused) <= {0, 503}, (producers.refused, err[-3000:])
    assert len(killed) == KILLS
    assert err.count("the embedded server exited with code -9; starting it again") == KILLS
    assert len(acked) >= (KILLS + 1) * ACKS_BETWEEN_KILLS

    with EmbeddedRedis(data / "redis") as server:
        r = redis.Redis.from_url(server.url)
        assert read_durability(r).survives_crash is True
        log_key = keys.log_key("default")
        entries = r.xrange(log_key)
        present = {entry_id.decode() for entry_id, _ in entries}
        missing = [e for e in acked if e.split("/")[0] not in present]
        assert missing == [], f"{len(missing)} acknowledged events lost: {missing[:5]}"
        first = read_snapshot(r, "default")
        assert first is not None
        assert int(first.totals["events"]) == len(entries)
        # the same log, applied by one uninterrupted worker
        config = get_model(r, "default")
        assert config is not None
        put_model(r, "replica", config.model_copy(update={"generation": 0}))
        with r.pipeline(transaction=False) as p:
            for entry_id, fields in entries:
                p.xadd(keys.log_key("replica"), fields, id=entry_id)
            p.execute()
        replay = settings.model_copy(update={"redis_url": server.url})
        Worker(replay, models=["replica"]).run(until_idle=True, timeout=120)
        second = read_snapshot(r, "replica")
        assert second is not None
        assert second.last_id == first.last_id
        assert_same_snapshot(first, second)
        r.close()


def test_the_embedded_server_fsyncs_every_write_unless_told_otherwise(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path / "a") as server:
        r = redis.Redis.from_url(server.url)
        assert read_durability(r).as_dict() == {
            "appendonly": "yes",
            "appendfsync": "always",
            "acknowledged_writes_survive_a_server_crash": True,
        }
        r.close()
    with EmbeddedRedis(tmp_path / "b", appendfsync="everysec") as server:
        r = redis.Redis.from_url(server.url)
        durability = read_durability(r)
        assert (durability.survives_crash, durability.gauge_value) == (False, 0)
        r.close()
    with pytest.raises(ValueError, match="appendfsync must be"):
        EmbeddedRedis(tmp_path / "c", appendfsync="sometimes")
    assert Settings.model_fields["redis_appendfsync"].default == "always"
    with pytest.raises(ValueError):
        Settings(redis_appendfsync="no")  # type: ignore[arg-type]
