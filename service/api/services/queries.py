"""``GET /queries``: the label-request stream as server-sent events.

Each label request the worker emits (``omtl:{m}:queries``) becomes one SSE
message with ``id`` = its stream id, ``event: label_request`` and a JSON body.
A client resumes after a reconnect with the standard ``Last-Event-ID`` header.
Every subscriber sees every request (a broadcast); annotators that must share
the work read the stream with a consumer group instead (see the README).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import orjson

from service.api.context import ApiContext
from service.store import keys

__all__ = ["label_requests", "request_body"]

#: Longest single blocking read; a comment line keeps idle connections alive.
KEEPALIVE_SECONDS = 15.0


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _number(v: Any) -> float | None:
    text = _text(v) if v is not None else ""
    try:
        return float(text) if text else None
    except ValueError:
        return None


def request_body(model: str, entry_id: str, fields: dict[Any, Any]) -> dict[str, Any]:
    """The JSON of one label request."""
    f = {_text(k): v for k, v in fields.items()}
    ts = _number(f.get("ts"))
    ref = f.get("ref")
    return {
        "id": entry_id,
        "model": model,
        "event_id": _text(f.get("event", b"")),
        "task": _text(f.get("task", b"")),
        "score": _number(f.get("score")),
        "p": _number(f.get("p")),
        "ref": _text(ref) if ref not in (None, b"") else None,
        "ts": None if ts is None else int(ts),
    }


async def label_requests(
    ctx: ApiContext, model: str, after: str, limit: int | None, timeout: float | None
) -> AsyncIterator[bytes]:
    """SSE frames of the label requests after stream id ``after`` ("$": only new ones).

    Stops after ``limit`` requests or ``timeout`` seconds, when given.
    """
    key = keys.queries_key(model)
    if after == "$":
        last = await ctx.redis.xrevrange(key, count=1)
        after = _text(last[0][0]) if last else "0-0"
    sent = 0
    deadline = None if timeout is None else time.monotonic() + timeout
    yield b": label requests of model " + model.encode() + b"\n\n"
    while limit is None or sent < limit:
        wait = KEEPALIVE_SECONDS
        if deadline is not None:
            wait = min(wait, deadline - time.monotonic())
            if wait <= 0:
                return
        count = None if limit is None else limit - sent
        reply: Any = await ctx.redis.xread(
            {key: after}, count=count, block=max(1, int(wait * 1000))
        )
        if not reply:
            yield b": keep-alive\n\n"
            continue
        for entry_id, fields in reply[0][1]:
            after = _text(entry_id)
            body = orjson.dumps(request_body(model, after, fields))
            yield b"id: " + after.encode() + b"\nevent: label_request\ndata: " + body + b"\n\n"
            sent += 1
