"""``rediss://``: the API (through redis-py, its fast path speaks plain TCP only), the
worker and the label path against a Redis server that offers only TLS.

The embedded Valkey binary is built without TLS, so this test starts the system's
``redis-server`` (Debian's is built with TLS) with a self-signed certificate made by
``openssl``; it is skipped, with the reason, where either is missing
(docs/architecture.md, "Authentication and roles").
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.embedded_redis import free_port
from service.settings import Settings
from service.worker import Worker

SERVER = shutil.which("redis-server")
OPENSSL = shutil.which("openssl")


def _tls_server(tmp: Path) -> Iterator[str]:
    """A TLS-only redis-server on a free port; yields its ``rediss://`` URL."""
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        [str(OPENSSL), "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    port = free_port()
    proc = subprocess.Popen(
        [str(SERVER), "--port", "0", "--tls-port", str(port), "--tls-cert-file", str(cert),
         "--tls-key-file", str(key), "--tls-ca-cert-file", str(cert),
         "--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--dir", str(tmp)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={cert}"
    try:
        deadline = time.monotonic() + 15
        while True:
            if proc.poll() is not None:
                out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                if "TLS" in out and ("not supported" in out or "support" in out):
                    pytest.skip(f"{SERVER} is built without TLS")
                raise RuntimeError(f"redis-server exited: {out[-500:]}")
            try:
                if redis.Redis.from_url(url, socket_timeout=1).ping():
                    break
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def tls_url(tmp_path: Path) -> Iterator[str]:
    if SERVER is None or OPENSSL is None:
        pytest.skip("needs the system's redis-server (built with TLS) and openssl")
    yield from _tls_server(tmp_path)


def test_the_loop_runs_over_tls(tls_url: str, settings: Settings) -> None:
    plain = tls_url.replace("rediss://", "redis://").split("?")[0]
    with pytest.raises(redis.ConnectionError):  # the server speaks TLS only
        redis.Redis.from_url(plain, socket_timeout=2).ping()
    s = settings.model_copy(
        update={"redis_url": tls_url, "default_n_features": 2, "default_learner": "cmtl"}
    )
    with TestClient(create_app(s)) as client:
        predicted = client.post("/predict", json={"task": "a", "x": [1.0, 2.0]})
        assert predicted.status_code == 200, predicted.text
        labelled = client.post("/events", json={"events": [{"task": "a", "x": [1, 0], "y": 1}]})
        assert labelled.status_code == 202, labelled.text
        result = Worker(s).run(until_idle=True, timeout=60)
        assert (result.events, result.labelled_events, result.snapshots) == (2, 1, 1)
        answer = client.post("/label", json={"event_id": predicted.json()["event_id"], "y": -1})
        assert answer.status_code == 202 and answer.json()["status"] == "accepted"
        Worker(s).run(until_idle=True, timeout=60)
        counts = client.get("/models/default").json()["counts"]
        assert (counts["events"], counts["labels"]) == (2, 2)
