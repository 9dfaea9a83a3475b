"""Shared fixtures: a real Redis-compatible server for the tests (never a mock).

Each test session (each pytest-xdist worker process) starts its own throwaway
server from :mod:`service.embedded_redis` on a free port in a temporary
directory. ``TEST_REDIS_URL`` may name a server to use instead; the suite then
refuses to start unless the databases it would use are empty, because the
function-scoped clients FLUSHDB before each test. With pytest-xdist, worker
``gwN`` uses database ``base + N`` of that server so the workers never share
one.

``REDIS_URL`` is the service's own setting (operators export it); the suite
never reads it and removes it from the environment so that no code under test
picks up a real server by accident.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

from service.embedded_redis import EmbeddedRedis
from service.settings import Settings

os.environ.pop("REDIS_URL", None)

#: How many databases a ``TEST_REDIS_URL`` run may use (one per xdist worker).
_MAX_XDIST_WORKERS = 8


def _database_url(url: str, offset: int) -> str:
    """``url`` with its database number moved by ``offset`` (``/0`` -> ``/offset``)."""
    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{base + offset}"))


def _worker_index() -> int:
    """The xdist worker number (``gw3`` -> 3), 0 without xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(worker.removeprefix("gw") or 0)


def refuse_non_empty(url: str, databases: int) -> None:
    """Stop the session if any of the ``databases`` from ``url`` on holds a key."""
    for offset in range(databases):
        target = _database_url(url, offset)
        with redis.Redis.from_url(target) as client:
            keys = int(client.dbsize())
        if keys:
            raise pytest.UsageError(
                f"TEST_REDIS_URL database {target} holds {keys} keys; the test suite "
                "flushes its databases, so it runs only against empty ones. Give it an "
                "empty database (or none: the suite starts its own throwaway server)."
            )


def pytest_sessionstart(session: pytest.Session) -> None:
    """With ``TEST_REDIS_URL``: check, once in the controlling process, that it is empty."""
    given = os.environ.get("TEST_REDIS_URL")
    if not given or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    numprocesses = getattr(session.config.option, "numprocesses", None) or 1
    databases = numprocesses if isinstance(numprocesses, int) else _MAX_XDIST_WORKERS
    refuse_non_empty(given, min(databases, _MAX_XDIST_WORKERS))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with a ``slow`` test first, each module's tests kept together and in order.

    ``make test`` runs the suite on a few xdist workers (one more than the cores), which
    take the tests in collection order: a 20-30 s end-to-end test collected near the end
    would run on one worker while the others have nothing left. Started first, the long
    tests overlap the many short ones.
    Every worker collects and sorts the same way, as xdist requires."""
    slow = {getattr(item, "module", None) for item in items if item.get_closest_marker("slow")}
    slow.discard(None)
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (getattr(item, "module", None) not in slow, order[id(item)]))


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of the session's server: ``TEST_REDIS_URL`` (one database per worker), else embedded."""
    given = os.environ.get("TEST_REDIS_URL")
    if given:
        yield _database_url(given, _worker_index())
        return
    # throwaway data: no fsync per write (the default ``always`` is what
    # tests/service/test_core_server_kills.py exercises, through ``omtl up``)
    with EmbeddedRedis(tmp_path_factory.mktemp("redis"), appendfsync="everysec") as server:
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


# ---------------------------------------------------------------- Redis Cluster
@pytest.fixture(scope="session")
def cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``redis+cluster://`` URL of a real 3-primary cluster of embedded servers (per session)."""
    from service.embedded_cluster import EmbeddedCluster

    with EmbeddedCluster(tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster.url


@pytest.fixture
def crb(cluster_url: str) -> Iterator[redis.Redis]:
    """A bytes cluster client (as the worker uses) on an emptied cluster."""
    from service.store import connect

    client = connect(cluster_url)
    for node in client.get_primaries():  # type: ignore[attr-defined]
        client.flushall(target_nodes=node)  # type: ignore[call-arg]
    yield client
    client.close()


@pytest.fixture
def cluster_settings(settings: Settings, cluster_url: str) -> Settings:
    """The test settings, pointed at the cluster."""
    return settings.model_copy(update={"redis_url": cluster_url})
