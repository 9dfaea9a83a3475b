"""The suite runs only on its own server or an empty ``TEST_REDIS_URL`` database."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from service.embedded_redis import EmbeddedRedis

ROOT = Path(__file__).resolve().parent.parent


def _run_suite_part(test_redis_url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run one small Redis-using test module of the suite against ``test_redis_url``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["TEST_REDIS_URL"] = test_redis_url
    env["REDIS_URL"] = "redis://127.0.0.1:1/0"  # an operator's setting: must be ignored
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *extra,
            "tests/service/test_snapshot.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.fixture
def spare_server(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    """A second throwaway server, standing for a database someone gave the suite."""
    with EmbeddedRedis(tmp_path / "spare") as server:
        yield server


def test_suite_refuses_a_non_empty_test_database(spare_server: EmbeddedRedis) -> None:
    with redis.Redis.from_url(spare_server.url) as client:
        client.set("customer:1", "precious")
    done = _run_suite_part(spare_server.url)
    assert done.returncode != 0
    assert "holds 1 keys" in done.stdout + done.stderr
    with redis.Redis.from_url(spare_server.url) as client:
        assert client.get("customer:1") == b"precious"  # nothing flushed


def test_suite_refuses_when_an_xdist_worker_database_is_not_empty(
    spare_server: EmbeddedRedis,
) -> None:
    with redis.Redis.from_url(spare_server.url.replace("/0", "/1")) as client:
        client.set("customer:2", "precious")
    done = _run_suite_part(spare_server.url, "-n", "2")
    assert done.returncode != 0
    assert "/1 holds 1 keys" in done.stdout + done.stderr


def test_suite_runs_on_an_empty_test_database_and_ignores_redis_url(
    spare_server: EmbeddedRedis,
) -> None:
    done = _run_suite_part(spare_server.url)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
    with redis.Redis.from_url(spare_server.url) as client:
        flushes = client.info("commandstats").get("cmdstat_flushdb", {}).get("calls", 0)
    assert flushes >= 1  # the tests ran on the given server, not on REDIS_URL's
