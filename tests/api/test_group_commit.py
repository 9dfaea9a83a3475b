"""Concurrent appends in one event-loop iteration share one script call, each with its own ids."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2 as httpx
import redis

from service.api.app import create_app
from service.settings import Settings
from service.store.group_commit import GroupCommit
from service.store.resp import pack
from service.store.scripts import APPEND_EVENTS


async def _concurrently(settings: Settings, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            await client.put("/models/other", json={"learner": "ipl", "n_features": 2})
            return list(await asyncio.gather(*(client.post("/predict", json=b) for b in bodies)))


def test_concurrent_predicts_are_batched_in_arrival_order(
    api_settings: Settings, rb: redis.Redis
) -> None:
    bodies: list[dict[str, Any]] = [
        {"task": f"t{i}", "x": [i, 1, 2], "ref": str(i)} for i in range(20)
    ]
    bodies.insert(5, {"model": "other", "task": "a", "x": [1, 2]})
    bodies.insert(9, {"model": "missing", "task": "a", "x": [1, 2]})
    rb.config_resetstat()
    answers = asyncio.run(_concurrently(api_settings, bodies))
    statuses = [a.status_code for a in answers]
    assert statuses == [404 if b.get("model") == "missing" else 200 for b in bodies]
    ours = [a.json()["event_id"] for a, b in zip(answers, bodies, strict=True) if "model" not in b]
    assert len(set(ours)) == 20
    log = rb.xrange("omtl:{default}:log")
    assert [eid.decode() for eid, _ in log] == ours
    assert [fields[b"ref"].decode() for _, fields in log] == [str(i) for i in range(20)]
    assert rb.xlen("omtl:{other}:log") == 1
    assert rb.exists("omtl:{missing}:log") == 0
    calls = int(rb.info("commandstats")["cmdstat_evalsha"]["calls"])
    assert calls < 10, f"{calls} script calls for 22 concurrent requests"


def test_the_cached_command_head_packs_like_a_plain_command() -> None:
    commit = GroupCommit(run_script=None, fast=None, maxlen=100)  # type: ignore[arg-type]
    script_keys = ["omtl:{m}:config", "omtl:{m}:log", "omtl:{m}:snapshot"]
    args: list[Any] = [3, 100, 1, 4, "k", "e", "x32", b"\x00\x01"]
    expected = pack("EVALSHA", APPEND_EVENTS.sha, 3, *script_keys, *args)
    assert commit._command("m", script_keys, args) == expected
    assert commit._command("m", script_keys, args[:3]) == pack(
        "EVALSHA", APPEND_EVENTS.sha, 3, *script_keys, *args[:3]
    )


def test_a_lone_append_is_written_before_the_caller_yields(
    api_settings: Settings, rb: redis.Redis
) -> None:
    """Nothing queued or in flight: the append leaves at once; appends made while it
    awaits its reply are queued and leave together in the next loop iteration."""

    async def scenario() -> tuple[int, int, int, list[int]]:
        app = create_app(api_settings)
        async with app.router.lifespan_context(app):
            ctx = app.state.ctx
            assert ctx.fast is not None
            protocol = ctx.fast._protocol
            rb.config_resetstat()
            fields = {"k": "e", "task": "a", "x": "[1, 2, 3]"}
            gen = int(rb.hget("omtl:{default}:config", "generation") or 0)
            first = ctx.appender.append("default", gen, [fields])
            sent_at_once = len(protocol.waiting)  # no await since the append
            second = ctx.appender.append("default", gen, [fields])
            third = ctx.appender.append("default", gen, [fields])
            queued = len(protocol.waiting)
            replies = await asyncio.gather(first, second, third)
            calls = int(rb.info("commandstats")["cmdstat_evalsha"]["calls"])
            return sent_at_once, queued, calls, [r.status for r in replies]

    sent_at_once, queued, calls, statuses = asyncio.run(scenario())
    assert (sent_at_once, queued) == (1, 1)
    assert calls == 2  # the lone append, then the two queued behind it in one call
    assert statuses == [1, 1, 1]
    assert rb.xlen("omtl:{default}:log") == 3


def test_an_entry_that_cannot_be_encoded_fails_its_request_and_frees_the_commit(
    api_settings: Settings, rb: redis.Redis
) -> None:
    """The request gets the error instead of waiting forever, and the next lone append
    is again written at once."""

    async def scenario() -> tuple[str, int, int]:
        app = create_app(api_settings)
        async with app.router.lifespan_context(app):
            ctx = app.state.ctx
            gen = int(rb.hget("omtl:{default}:config", "generation") or 0)
            bad = ctx.appender.append("default", gen, [{"k": "e", "task": None}])
            try:
                await bad
            except TypeError as exc:
                error = str(exc)
            else:
                error = ""
            good = ctx.appender.append("default", gen, [{"k": "e", "task": "a", "x": "[1, 2, 3]"}])
            sent_at_once = len(ctx.fast._protocol.waiting)
            reply = await good
            return error, sent_at_once, reply.status

    error, sent_at_once, status = asyncio.run(scenario())
    assert "cannot send NoneType" in error
    assert (sent_at_once, status) == (1, 1)
    assert rb.xlen("omtl:{default}:log") == 1
