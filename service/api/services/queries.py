"""``GET /queries``: the label-request stream as server-sent events.

Each label request the worker emits (``omtl:{m}:queries``) becomes one SSE
message with ``id`` = its stream id, ``event: label_request`` and a JSON body.
A client resumes after a reconnect with the standard ``Last-Event-ID`` header;
the stream opens with an ``id:`` line (no data) naming its starting position, so
a client that connected with ``after=$`` and saw nothing yet resumes correctly.
Every subscriber sees every request (a broadcast); annotators that must share
the work read the stream with a consumer group instead (see the README). With
``answers=true`` a subscriber also gets ``event: label_answered`` (data:
``{model, event_id}``, no ``id``) as soon as ``POST /label`` accepts a label
from any client: how the annotator page drops answered requests on every open
page at once.

Subscribers of one model share one reader per API process
(:mod:`service.api.services.fanout`); an idle stream sends a comment line every
``queries_keepalive_s`` seconds (default 15 s, well inside the 60 s idle
timeout of common proxies and load balancers).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from service.api.context import ApiContext
from service.api.services.fanout import catch_up, frame_of, id_text, request_body
from service.store.codec import entry_id_tuple

__all__ = ["KEEPALIVE", "frame_of", "label_requests", "request_body"]

#: The comment line an idle stream sends.
KEEPALIVE = b": keep-alive\n\n"


async def label_requests(
    ctx: ApiContext,
    model: str,
    after: str,
    limit: int | None,
    timeout: float | None,
    answers: bool = False,
) -> AsyncIterator[bytes]:
    """SSE frames of the label requests after stream id ``after`` ("$": only new ones).

    Stops after ``limit`` requests or ``timeout`` seconds, when given, or when
    the model's reader stops (the client reconnects with ``Last-Event-ID``).
    """
    fanout = ctx.queries.join(model)
    try:
        await fanout.ready.wait()
        cursor = fanout.last_id if after == "$" else entry_id_tuple(after)
        answered = fanout.answers_last  # answers from now on
        left = limit
        deadline = None if timeout is None else time.monotonic() + timeout
        keepalive = ctx.settings.queries_keepalive_s
        # the position as an id without data: a client that reconnects with this
        # Last-Event-ID misses nothing that arrived while it was away
        start = b"id: " + id_text(cursor).encode() + b"\n\n"
        yield b": label requests of model " + model.encode() + b"\n" + start
        async for frame, caught_up_to in catch_up(ctx.redis, fanout, cursor, left):
            yield frame
            cursor = caught_up_to
            left = None if left is None else left - 1
        cursor = max(cursor, fanout.covered_from) if left != 0 else cursor
        while left is None or left > 0:
            done: list[bytes] = []
            if answers:
                done, answered = fanout.answers_after(answered)
                if done:
                    yield b"".join(done)
            frames, cursor = fanout.after(cursor, left)
            if frames:
                yield b"".join(frames)
                left = None if left is None else left - len(frames)
                continue
            if done:  # look again before waiting: more may have come while we sent
                continue
            if not fanout.running:
                return
            wait = keepalive
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    return
            if not await fanout.wait(wait):
                if deadline is not None and time.monotonic() >= deadline:
                    return
                yield KEEPALIVE
    finally:
        fanout.subscribers -= 1
