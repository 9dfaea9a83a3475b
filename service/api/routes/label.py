"""``POST /label``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from service.api.access import annotator_of, authorize, check_model, rate_limit
from service.api.deps import get_context
from service.api.jsonio import json_response, parse_body, read_json
from service.api.openapi import LABEL_ERRORS, needs, raw_body
from service.api.schemas import LabelAccepted, LabelRequest
from service.api.services import labelling
from service.auth import Role

router = APIRouter(tags=["label"])


@router.post(
    "/label",
    status_code=202,
    response_model=LabelAccepted,
    responses=LABEL_ERRORS,
    openapi_extra=raw_body(LabelRequest) | needs(Role.ANNOTATOR, rate_limited=True),
)
async def label(request: Request) -> Response:
    """Label an event once: 202 when accepted or repeated, 409 for a different label.

    With API keys the label records the key's name as its annotator (a client-sent
    ``annotator`` is ignored).
    """
    ctx = get_context(request)
    principal = authorize(request, Role.ANNOTATOR)
    await rate_limit(request, principal, "label")
    req = parse_body(LabelRequest, await read_json(request))
    check_model(principal, ctx.model_name(req.model))
    req.annotator = annotator_of(principal, req.annotator)
    return json_response(await labelling.label(ctx, req), status_code=202)
