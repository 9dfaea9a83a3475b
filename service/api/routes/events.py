"""``POST /events``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from service.api.access import authorize, check_model, rate_limit
from service.api.deps import get_context
from service.api.jsonio import json_response, parse_body, read_json
from service.api.openapi import ERRORS, needs, raw_body
from service.api.schemas import EventsAccepted, EventsRequest
from service.api.services import ingesting
from service.auth import Role

router = APIRouter(tags=["events"])


@router.post(
    "/events",
    status_code=202,
    response_model=EventsAccepted,
    responses=ERRORS,
    openapi_extra=raw_body(EventsRequest) | needs(Role.PRODUCER, rate_limited=True),
)
async def events(request: Request) -> Response:
    """Append a batch of labelled or unlabelled events; all are validated before any is written."""
    ctx = get_context(request)
    principal = authorize(request, Role.PRODUCER)
    await rate_limit(request, principal, "events")
    req = parse_body(EventsRequest, await read_json(request))
    check_model(principal, ctx.model_name(req.model))
    return json_response(await ingesting.ingest(ctx, req), status_code=202)
