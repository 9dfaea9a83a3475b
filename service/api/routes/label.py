"""``POST /label``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from service.api.deps import get_context
from service.api.jsonio import json_response, parse_body, read_json
from service.api.openapi import LABEL_ERRORS, raw_body
from service.api.schemas import LabelAccepted, LabelRequest
from service.api.services import labelling

router = APIRouter(tags=["label"])


@router.post(
    "/label",
    status_code=202,
    response_model=LabelAccepted,
    responses=LABEL_ERRORS,
    openapi_extra=raw_body(LabelRequest),
)
async def label(request: Request) -> Response:
    """Label an event once: 202 when accepted or repeated, 409 for a different label."""
    ctx = get_context(request)
    req = parse_body(LabelRequest, await read_json(request))
    return json_response(await labelling.label(ctx, req), status_code=202)
