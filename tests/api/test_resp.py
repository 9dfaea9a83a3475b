"""The API's pipelined hot-path connection against the real server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import redis
import uvloop

from service.store.resp import RespConnection, RespError, pack
from service.store.scripts import LuaScript

ECHO = LuaScript("return {KEYS[1], ARGV[1], tonumber(ARGV[2]) + 1}")


def test_pack_is_resp() -> None:
    assert pack("SET", b"k", 12) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n12\r\n"


RUNNERS = [pytest.param(asyncio.run, id="asyncio"), pytest.param(uvloop.run, id="uvloop")]


@pytest.mark.parametrize("runner", RUNNERS)
def test_pipelined_calls_get_their_own_replies(
    redis_url: str, rb: redis.Redis, runner: Callable[[Any], Any]
) -> None:
    async def run() -> list[object]:
        conn = RespConnection(redis_url)
        try:
            calls = [conn.call("INCR", "counter") for _ in range(50)]
            return list(await asyncio.gather(*calls))
        finally:
            conn.close()

    assert runner(run()) == list(range(1, 51))


def test_evalsha_loads_a_missing_script_and_errors_raise(redis_url: str, rb: redis.Redis) -> None:
    rb.script_flush()

    async def run() -> object:
        conn = RespConnection(redis_url)
        try:
            first = await conn.evalsha(ECHO.sha, ECHO.source, ["k"], ["v", 41])
            await conn.call("SET", "s", "x")
            with pytest.raises(RespError, match="WRONGTYPE"):
                await conn.call("LPUSH", "s", "y")
            return first
        finally:
            conn.close()

    assert asyncio.run(run()) == [b"k", b"v", 42]


def test_reconnects_after_the_connection_drops(redis_url: str, rb: redis.Redis) -> None:
    async def run() -> tuple[object, int]:
        conn = RespConnection(redis_url)
        await conn.call("SET", "a", "1")
        rb.client_kill_filter(_type="normal", skipme=True)
        failures = 0
        for _ in range(3):  # a call in flight when the socket closes fails once, then reconnects
            try:
                value = await conn.call("GET", "a")
                break
            except ConnectionError:
                failures += 1
        conn.close()
        return value, failures

    value, failures = asyncio.run(run())
    assert value == b"1" and failures <= 1


def test_only_plain_redis_urls() -> None:
    with pytest.raises(ValueError, match="redis:// URLs only"):
        RespConnection("rediss://example:6380/0")
    conn = RespConnection("redis://:secret@10.0.0.1:7000/3")
    assert (conn.host, conn.port, conn.password, conn.db) == ("10.0.0.1", 7000, "secret", 3)


def test_not_now_error_replies_count_as_redis_unavailable() -> None:
    from service.store import STORE_UNAVAILABLE
    from service.store.resp import RespUnavailable, reply_error

    loading = reply_error(Exception("LOADING Valkey is loading the dataset in memory"))
    assert isinstance(loading, RespUnavailable) and isinstance(loading, STORE_UNAVAILABLE)
    for text in ("BUSY Redis is busy running a script", "MASTERDOWN Link is down", "TRYAGAIN x"):
        assert isinstance(reply_error(Exception(text)), RespUnavailable), text
    wrong = reply_error(Exception("WRONGTYPE Operation against a key holding the wrong kind"))
    assert not isinstance(wrong, STORE_UNAVAILABLE)
    assert str(wrong).startswith("WRONGTYPE")
