"""``omtl up`` on a machine with no Redis: embedded server, API, worker, clean stop."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path

import httpx2 as httpx
import pytest
import redis

from service.embedded_redis import free_port
from service.store import keys
from service.store.snapshot import read_snapshot
from tests.service.helpers import api_ready, children, reap, stop_gracefully, up_process, wait_until


@pytest.mark.slow
def test_up_serves_predictions_learns_and_stops_cleanly(tmp_path: Path) -> None:
    api_port, metrics_port = free_port(), free_port()
    data = tmp_path / "data"
    proc = up_process(
        data,
        api_port=api_port,
        worker_metrics_port=metrics_port,
        default_n_features=3,
        snapshot_every_seconds=0.1,
        log_level="warning",
        lease_ttl_ms=1000,
    )
    base = f"http://127.0.0.1:{api_port}"
    http = httpx.Client(timeout=30)  # generous: the machine may be busy

    try:
        assert wait_until(lambda: api_ready(http, base), timeout=60, interval=0.1), (
            "the API never became ready"
        )
        assert http.get(f"{base}/docs").status_code == 200
        first = http.post(f"{base}/predict", json={"task": "spam", "x": [1.0, 0.5, -1.0]})
        assert first.status_code == 200, first.text
        event_id = first.json()["event_id"]
        label = http.post(f"{base}/label", json={"event_id": event_id, "y": -1})
        assert label.status_code == 202, label.text

        def learned() -> bool:
            body = http.get(f"{base}/models/default").json()
            return body["counts"]["labels"] == 1

        assert wait_until(learned, timeout=30, interval=0.05)

        def published() -> bool:  # the worker publishes its counters every 0.5 s
            text = http.get(f"http://127.0.0.1:{metrics_port}/metrics").text
            return 'omtl_labels_total{model="default",task="spam"} 1.0' in text

        assert wait_until(published, timeout=10, interval=0.1)

        # the worker dies: `omtl up` starts a new one, which takes the model over
        (worker_pid,) = children(proc.pid, "service.worker")
        os.kill(worker_pid, signal.SIGKILL)
        assert wait_until(lambda: children(proc.pid, "service.worker") != [worker_pid], 30)
        second = http.post(f"{base}/predict", json={"task": "ham", "x": [0.0, 1.0, 2.0]})
        assert second.status_code == 200, second.text
        label = http.post(f"{base}/label", json={"event_id": second.json()["event_id"], "y": 1})
        assert label.status_code == 202, label.text

        def learned_twice() -> bool:
            return http.get(f"{base}/models/default").json()["counts"]["labels"] == 2

        assert wait_until(learned_twice, timeout=30, interval=0.05)
        # an annotator's label-request stream is open while `omtl up` stops: the stop
        # must not wait for it to end (streams never end by themselves)
        opened = threading.Event()

        def follow() -> None:
            url = f"{base}/queries?model=default&after=0-0"
            with (
                contextlib.suppress(httpx.HTTPError),
                httpx.Client(timeout=120) as sse,
                sse.stream("GET", url) as stream,
            ):
                for _ in stream.iter_lines():
                    opened.set()

        annotator = threading.Thread(target=follow, daemon=True)
        annotator.start()
        assert opened.wait(30), "the label-request stream never answered"
        out, err = stop_gracefully(proc)
        annotator.join(30)
        assert not annotator.is_alive()  # the stream was closed by the stop
    finally:
        http.close()
        reap(proc)
    assert proc.returncode == 0, err
    assert f"{base}/docs" in out
    assert f"{base}/queries?model=default" in out
    assert "bye bye" in (data / "redis" / "server.log").read_text()
    # everything was persisted: a server on the same directory has the log and the snapshot
    from service.embedded_redis import EmbeddedRedis

    with EmbeddedRedis(data / "redis") as server:
        c = redis.Redis.from_url(server.url)
        assert c.xlen(keys.log_key("default")) == 4  # two events and their labels
        snapshot = read_snapshot(c, "default")
        assert snapshot is not None
        assert snapshot.task_names == ["spam", "ham"]
        assert int(snapshot.counters["labels"].sum()) == 2
        c.close()
