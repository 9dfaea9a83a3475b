"""Redis credentials in ``REDIS_URL``: a password (``requirepass``) and an ACL user work for
the API (its pipelined fast path included), the worker and ``omtl keys``; wrong ones are a
503, never an unauthenticated connection left behind.

TLS (``rediss://``): the embedded Valkey binary is built without TLS ("Failed finding TLS
support"), so no test server can offer it; what is tested is that a ``rediss://`` URL makes
the API use redis-py (which speaks TLS) instead of its plain-TCP fast path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.api.context import ApiContext
from service.cli import main as omtl
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings, get_settings
from service.store import keys
from service.store.resp import RespConnection
from service.worker import Worker
from tests.api.auth_fixtures import flushed

# One xdist worker runs the whole module: its two password-protected servers are started once, not
# once on each worker.
pytestmark = pytest.mark.xdist_group("redis-auth")

SECRET = "p@ss:w/rd 1"  # characters that must be quoted in a URL


@pytest.fixture(
    scope="module",
    params=[{"password": SECRET}, {"username": "omtl-app", "password": SECRET}],
    ids=["requirepass", "acl-user"],
)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis(tmp_path_factory.mktemp("redis-auth"), **request.param) as s:
        yield s


@pytest.fixture
def r(server: EmbeddedRedis) -> Iterator[redis.Redis]:
    yield from flushed(server.url)


def _settings(url: str, tmp: Path) -> Settings:
    return Settings(
        redis_url=url,
        data_dir=tmp,
        default_n_features=3,
        snapshot_every_seconds=0.2,
        block_ms=50,
        worker_metrics_port=0,
    )


def test_the_server_refuses_clients_without_the_credentials(server: EmbeddedRedis) -> None:
    assert "@" in server.url
    with (
        pytest.raises(redis.AuthenticationError),
        redis.Redis(host=server.host, port=server.port) as bare,
    ):
        bare.ping()


def test_api_fast_path_worker_and_queries_with_credentials(
    server: EmbeddedRedis, r: redis.Redis, tmp_path: Path
) -> None:
    settings = _settings(server.url, tmp_path)
    app = create_app(settings)
    with TestClient(app) as client:
        assert app.state.ctx.fast is not None  # the pipelined RESP connection serves the writes
        first = client.post("/predict", json={"task": "a", "x": [1, 0, 0]})
        assert first.status_code == 200
        events = client.post("/events", json={"events": [{"task": "b", "x": [0, 1, 0], "y": 1}]})
        assert events.status_code == 202
        result = Worker(settings, models=["default"]).run(until_idle=True, timeout=30)
        assert result.events == 2
        stream = client.get("/queries", params={"after": "0-0", "limit": 1, "timeout": 10})
        (request,) = [
            orjson.loads(x[6:]) for x in stream.text.splitlines() if x.startswith("data: ")
        ]
        assert request["event_id"] == first.json()["event_id"]
        label = client.post("/label", json={"event_id": request["event_id"], "y": -1})
        assert label.status_code == 202
        Worker(settings, models=["default"]).run(until_idle=True, timeout=30)
        assert client.get("/models/default").json()["counts"]["labels"] == 2
    assert r.xlen(keys.log_key("default")) == 3


def test_omtl_keys_with_credentials(
    server: EmbeddedRedis,
    r: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("REDIS_URL", server.url)
    get_settings.cache_clear()
    try:
        assert omtl(["keys", "create", "--role", "admin", "--name", "ops"]) == 0
    finally:
        get_settings.cache_clear()
    assert capsys.readouterr().out.startswith("omtl_")
    assert r.hexists(keys.auth_names_key(), "ops")


def _wrong(server: EmbeddedRedis) -> str:
    return server.url.replace("%40ss", "%40xx")


def test_wrong_credentials_fail_the_fast_path_cleanly(server: EmbeddedRedis) -> None:
    async def run() -> tuple[Any, Any]:
        conn = RespConnection(_wrong(server), timeout=5)
        with pytest.raises(ConnectionError, match=r"WRONGPASS|invalid") as first:
            await conn.call("PING")
        with pytest.raises(ConnectionError):  # the next call tries again, still refused
            await conn.call("PING")
        good = RespConnection(server.url, timeout=5)
        pong = await good.call("PING")
        good.close()
        return first.value, pong

    error, pong = asyncio.run(run())
    assert "refused the connection set-up" in str(error)
    assert pong == b"PONG"


def test_api_with_wrong_credentials_answers_503(server: EmbeddedRedis, tmp_path: Path) -> None:
    settings = _settings(_wrong(server), tmp_path).model_copy(update={"default_model": ""})
    app = create_app(settings)
    with pytest.raises(redis.AuthenticationError), TestClient(app):
        pass  # the lifespan's PING already says so: the API does not start


def test_a_tls_url_uses_redis_py_instead_of_the_fast_path() -> None:
    ctx = ApiContext.connect(Settings(redis_url="rediss://omtl:secret@redis.example:6380/0"))
    assert ctx.fast is None
    pool_kwargs = ctx.redis.connection_pool.connection_kwargs
    assert (pool_kwargs["username"], pool_kwargs["password"]) == ("omtl", "secret")
    assert ctx.redis.connection_pool.connection_class.__name__ == "SSLConnection"
    with pytest.raises(ValueError, match="redis:// URLs only"):
        RespConnection("rediss://redis.example:6380/0")
