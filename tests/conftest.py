"""Shared fixtures: a real Redis-compatible server for the tests (never a mock).

Each test session (each pytest-xdist worker process) starts its own throwaway
server from :mod:`service.embedded_redis` on a free port in a temporary
directory, unless ``TEST_REDIS_URL`` (or ``REDIS_URL``) names a server to use.
The function-scoped clients FLUSHDB before each test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from service.embedded_redis import EmbeddedRedis
from service.settings import Settings


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of the session's server: TEST_REDIS_URL / REDIS_URL, else an embedded one."""
    given = os.environ.get("TEST_REDIS_URL") or os.environ.get("REDIS_URL")
    if given:
        yield given
        return
    with EmbeddedRedis(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    """A text client (``decode_responses=True``) on a flushed database."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def rb(redis_url: str) -> Iterator[redis.Redis]:
    """A bytes client (``decode_responses=False``, as the worker uses) on a flushed database."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def settings(redis_url: str, tmp_path: os.PathLike[str]) -> Settings:
    """Settings pointing at the session's server, with short intervals for tests."""
    return Settings(
        redis_url=redis_url,
        data_dir=tmp_path,
        snapshot_every_entries=1000,
        snapshot_every_seconds=0.2,
        lease_ttl_ms=1000,
        heartbeat_ttl_s=5,
        block_ms=50,
        worker_metrics_port=0,
    )
