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
import redis

from evaluation.dataset import Dataset
from evaluation.npzformat import save_npz
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event
from tests.api.test_core_queries import LiveApi


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


def test_annotate_runs_until_its_timeout_across_an_api_restart(
    settings: Settings, rb: redis.Redis, tmp_path: Path
) -> None:
    """Idle 6 s (past redis-py's 5 s default timeout), then requests; the API restarts, more
    requests arrive while it is down and after: every one is answered once, and the command
    runs for its whole --timeout and exits 0."""
    data = _dataset(tmp_path / "toy.npz")
    port = _free_port()
    real = settings.model_copy(update={"default_n_features": 3})
    started = time.monotonic()
    with LiveApi(real, port):
        proc = _annotate(port, data, "--timeout", "16", "--reconnect-for", "20")
        time.sleep(6.0)
        _ask(rb, range(0, 5))
        time.sleep(2.0)
    _ask(rb, range(5, 8))  # while no API is up
    with LiveApi(real, port):
        time.sleep(1.5)
        _ask(rb, range(8, 10))
        out, err = proc.communicate(timeout=40)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, err
    assert "answered 10 label requests: 10 accepted" in out, out
    assert int(rb.hlen(keys.labels_key("default"))) == 10
    assert elapsed >= 15.5


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
