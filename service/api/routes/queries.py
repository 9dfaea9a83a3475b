"""``GET /queries``: label requests as server-sent events."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from service.api.access import authorize, check_model
from service.api.deps import ContextDep
from service.api.openapi import ERRORS, needs
from service.api.schemas import ENTRY_ID_PATTERN, MODEL_NAME_PATTERN, WithinStreamIds
from service.api.services.appending import view_of
from service.api.services.queries import label_requests
from service.auth import Role

router = APIRouter(tags=["queries"])

_ENTRY_ID = rf"^(\$|{ENTRY_ID_PATTERN})$"


@router.get(
    "/queries",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}, 404: ERRORS[404]},
    openapi_extra=needs(Role.ANNOTATOR),
)
async def queries(
    ctx: ContextDep,
    request: Request,
    model: Annotated[str | None, Query(pattern=MODEL_NAME_PATTERN)] = None,
    after: Annotated[
        str,
        Query(pattern=_ENTRY_ID, description="Start after this stream id; $ = new only."),
        WithinStreamIds,
    ] = "$",
    limit: Annotated[int | None, Query(ge=1, description="Stop after this many.")] = None,
    timeout: Annotated[
        float | None,
        Query(gt=0, allow_inf_nan=False, description="Stop after seconds (omit: no limit)."),
    ] = None,
    last_event_id: Annotated[str | None, Header(pattern=_ENTRY_ID), WithinStreamIds] = None,
    answers: Annotated[
        bool,
        Query(
            description="Also send event: label_answered {model, event_id} whenever "
            "POST /label accepts a label (from any client)."
        ),
    ] = False,
) -> StreamingResponse:
    """Stream label requests (event: label_request, data: {event_id, task, score, p, ref, ts}).

    Every subscriber sees every request; reconnecting clients resume with Last-Event-ID.
    """
    name = ctx.model_name(model)
    check_model(authorize(request, Role.ANNOTATOR), name)
    await view_of(ctx, name)  # 404 for an unknown model (the cached view: no round trip)
    start = last_event_id or after
    return StreamingResponse(
        label_requests(ctx, name, start, limit, timeout, answers),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
