"""``GET /models/{m}/queries/pending``: label requests issued and not yet labelled.

The label-request stream (``omtl:{m}:queries``) keeps every request, answered or
not; a request is *pending* while its event has no label in ``omtl:{m}:labels``
(the hash the label script fills when ``POST /label`` accepts one). The stream
is read oldest first in pages, each page's events looked up in one ``HMGET``,
until ``limit`` pending requests are found or ``scan`` requests were read.
See ``docs/architecture.md``, "Label requests".
"""

from __future__ import annotations

from typing import Any

from service.api.context import ApiContext
from service.api.services.appending import view_of
from service.api.services.fanout import request_body
from service.store import keys

__all__ = ["PAGE", "count_pending", "pending_requests"]

#: Requests read per round trip.
PAGE = 500


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


async def pending_requests(
    ctx: ApiContext, name: str, limit: int, scan: int, start: str = "-"
) -> dict[str, Any]:
    """Up to ``limit`` pending label requests of model ``name`` from stream id ``start`` on,
    oldest first, with the prediction their score gives; ``complete``: the stream was read
    to its end; ``scanned_to``: the last stream id read (None: none)."""
    view = await view_of(ctx, name)
    stream, labels = keys.queries_key(name), keys.labels_key(name)
    found: list[dict[str, Any]] = []
    read = 0
    at_end = False
    scanned_to: str | None = None
    while len(found) < limit and read < scan and not at_end:
        want = min(PAGE, scan - read)
        page = [
            (i, f or {}) for i, f in await ctx.redis.xrange(stream, min=start, count=want) or []
        ]
        read += len(page)
        at_end = len(page) < want
        if not page:
            break
        events = [_text(fields.get(b"event", b"")) for _, fields in page]
        answered = await ctx.redis.hmget(labels, events)
        for i, ((entry_id, fields), label) in enumerate(zip(page, answered, strict=True)):
            if label is not None:
                continue
            body = request_body(name, _text(entry_id), fields)
            score = body["score"]
            body["prediction"] = None if score is None else view.label(score)
            found.append(body)
            if len(found) == limit:
                at_end = at_end and i == len(page) - 1
                scanned_to = _text(entry_id)
                break
        else:
            scanned_to = _text(page[-1][0])
        start = "(" + _text(page[-1][0])
    return {
        "model": name,
        "kind": "regression" if view.regression else "classification",
        "requests": found,
        "complete": at_end,
        "scanned_to": scanned_to,
    }


async def count_pending(ctx: ApiContext, name: str, scan: int) -> tuple[int, bool]:
    """How many of the first ``scan`` label requests of model ``name`` are pending, and
    whether that covers the whole stream."""
    stream, labels = keys.queries_key(name), keys.labels_key(name)
    count = read = 0
    start = "-"
    while read < scan:
        want = min(PAGE, scan - read)
        page = await ctx.redis.xrange(stream, min=start, count=want) or []
        read += len(page)
        if page:
            events = [_text((fields or {}).get(b"event", b"")) for _, fields in page]
            answered = await ctx.redis.hmget(labels, events)
            count += sum(1 for label in answered if label is None)
            start = "(" + _text(page[-1][0])
        if len(page) < want:
            return count, True
    return count, False
