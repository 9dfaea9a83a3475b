"""``POST /events``: producers without Redis access append labelled or unlabelled events."""

from __future__ import annotations

from typing import Any

from service.api.context import ApiContext
from service.api.schemas import EventsRequest
from service.api.services import rounds
from service.api.services.appending import (
    check_count,
    check_labels,
    encode_events,
    event_ids,
    finish_append,
    start_append,
    to_x,
    twice_on_stale,
    view_of,
)

__all__ = ["ingest"]


async def _ingest_once(ctx: ApiContext, name: str, req: EventsRequest) -> dict[str, Any] | None:
    """One attempt of :func:`ingest`; None when the configuration changed under it."""
    view = await view_of(ctx, name)
    events = req.events
    ys = [e.y for e in events]
    refs = [e.ref for e in events]
    if rounds.check_forms(view, [e.views is not None for e in events], "events[{i}]"):
        views = [
            rounds.to_round(view, e.views, e.task, f"events[{i}]")  # type: ignore[arg-type]
            for i, e in enumerate(events)
        ]
        check_labels(view, ys)
        entries, batched = rounds.encode_rounds(views, ys, refs), False
    else:
        xs = [to_x(e.x, view.n_features, f"events[{i}].x") for i, e in enumerate(events)]  # type: ignore[arg-type]
        check_labels(view, ys)
        view.admit([e.task for e in events])
        entries, batched = encode_events([e.task for e in events], xs, ys, refs)
    reply = await finish_append(ctx, view, start_append(ctx, view, entries))
    if reply is None:
        return None
    ids = event_ids(reply, batched, len(events))
    return {"count": len(ids), "event_ids": ids}


async def ingest(ctx: ApiContext, req: EventsRequest) -> dict[str, Any]:
    """Validate every event against the model, then append all of them or none."""
    check_count(len(req.events), ctx)
    name = ctx.model_name(req.model)
    return await twice_on_stale(name, lambda: _ingest_once(ctx, name, req))
