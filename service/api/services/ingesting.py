"""``POST /events``: producers without Redis access append labelled or unlabelled events."""

from __future__ import annotations

from typing import Any

from service.api.cache import ModelView
from service.api.context import ApiContext
from service.api.schemas import EventsRequest
from service.api.services.appending import (
    Appended,
    Prepared,
    append_with_retry,
    check_count,
    check_labels,
    to_x,
)

__all__ = ["ingest"]


async def ingest(ctx: ApiContext, req: EventsRequest) -> dict[str, Any]:
    """Validate every event against the model, then append all of them or none."""
    check_count(len(req.events), ctx)
    name = ctx.model_name(req.model)

    def prepare(view: ModelView) -> Prepared:
        xs = [to_x(e.x, view.n_features, f"events[{i}].x") for i, e in enumerate(req.events)]
        ys = [e.y for e in req.events]
        check_labels(view, ys)
        return Prepared([e.task for e in req.events], xs, ys, [e.ref for e in req.events])

    def then(view: ModelView, appended: Appended) -> dict[str, Any]:
        return {"count": len(appended.event_ids), "event_ids": appended.event_ids}

    return await append_with_retry(ctx, name, prepare, then)
