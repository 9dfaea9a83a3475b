"""``omtl annotate`` as a user runs it: until its --timeout, idle longer than any Redis
timeout, across a restart of the API, and exiting non-zero on errors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import redis

from evaluation.dataset import Dataset
from evaluation.npzformat import save_npz
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event
from tests.api.test_core_queries import LiveApi
from tests.service.helpers import wait_until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dataset(path: Path, n: int = 20) -> Path:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] >= 0, 1.0, -1.0)
    save_npz(path, Dataset("toy", X, y, np.zeros(n, dtype=np.int64), ["a"]))
    return path


def _ask(r: redis.Redis, rows: range) -> None:
    """Append unlabelled events for dataset ``rows`` and a label request for each."""
    for row in rows:
        fields = encode_event("a", [0.0, 0.0, 1.0], None, str(row), binary=True)
        event = r.xadd(keys.log_key("default"), fields).decode()  # type: ignore[arg-type]
        r.xadd(keys.queries_key("default"), {"event": event, "task": "a", "ref": str(row)})


_OMTL = "import sys; from service.cli import main; sys.exit(main(sys.argv[1:]))"


def _annotate(
    port: int, dataset: Path, *args: str, model: str = "default"
) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", _OMTL, "annotate", "--model", model]
    command += ["--from", str(dataset), "--url", f"http://127.0.0.1:{port}", *args]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
    )


def _reading(r: redis.Redis) -> bool:
    """Whether a client is blocked reading a label-request stream (the API's shared reader)."""
    return any(c.get("cmd") == "xread" for c in r.client_list())


def _labelled(r: redis.Redis) -> int:
    return int(r.hlen(keys.labels_key("default")))


@pytest.mark.slow
def test_annotate_answers_everything_across_an_api_restart(
    settings: Settings, rb: redis.Redis, tmp_path: Path
) -> None:
    """Idle 6 s (past redis-py's 5 s default timeout), then requests; the API restarts, more
    requests arrive while it is down and after: every one is answered once, exit 0."""
    data = _dataset(tmp_path / "toy.npz")
    port = _free_port()
    real = settings.model_copy(update={"default_n_features": 3})
    with LiveApi(real, port):
        proc = _annotate(port, data, "--limit", "10", "--timeout", "120", "--reconnect-for", "60")
        assert wait_until(lambda: _reading(rb), 60)  # subscribed: the shared reader blocks
        time.sleep(6.0)
        _ask(rb, range(0, 5))
        assert wait_until(lambda: _labelled(rb) == 5, 60)
    _ask(rb, range(5, 8))  # while no API is up
    with LiveApi(real, port):
        _ask(rb, range(8, 10))
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "answered 10 label requests: 10 accepted" in out, out
    assert "0 reconnects" not in out
    assert _labelled(rb) == 10


def test_annotate_runs_until_its_timeout(
    settings: Settings, rb: redis.Redis, tmp_path: Path
) -> None:
    """Nothing to answer: it still runs its whole --timeout (7 s, past every Redis client
    timeout that used to end the stream early) and exits 0."""
    data = _dataset(tmp_path / "toy.npz")
    with LiveApi(settings.model_copy(update={"default_n_features": 3})) as api:
        started = time.monotonic()
        proc = _annotate(api.port, data, "--timeout", "7")
        out, err = proc.communicate(timeout=120)
        elapsed = time.monotonic() - started
    assert proc.returncode == 0, err
    assert "answered 0 label requests" in out
    assert elapsed >= 7.0


def test_annotate_exits_non_zero_on_errors(
    settings: Settings, rb: redis.Redis, tmp_path: Path
) -> None:
    data = _dataset(tmp_path / "toy.npz")
    with LiveApi(settings.model_copy(update={"default_n_features": 3})) as api:
        unknown = _annotate(api.port, data, "--timeout", "5", model="nosuchmodel")
        _, err = unknown.communicate(timeout=30)
    assert unknown.returncode == 1
    assert "404" in err
    nobody = _annotate(_free_port(), data, "--timeout", "30", "--reconnect-for", "1")
    _, err = nobody.communicate(timeout=30)
    assert nobody.returncode == 1
    assert "omtl annotate" in err
