"""``POST /predict`` (single and batch form).

:func:`predict` is the one handler: FastAPI's router serves it, and so does
:class:`service.api.fastpath.PredictFastPath`, which calls the same endpoint
without the routing layers.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from service.api.access import authorize, check_model
from service.api.deps import get_context
from service.api.jsonio import json_response, parse_body, parse_json, read_body
from service.api.openapi import ERRORS, needs, raw_body
from service.api.schemas import (
    PredictBatchRequest,
    PredictBatchResponse,
    PredictRequest,
    PredictResponse,
)
from service.api.services import predicting
from service.auth import Role

router = APIRouter(tags=["predict"])


@router.post(
    "/predict",
    response_model=PredictResponse | PredictBatchResponse,
    responses=ERRORS,
    openapi_extra=raw_body(PredictRequest, PredictBatchRequest) | needs(Role.PRODUCER),
)
async def predict(request: Request) -> Response:
    """Score events with the latest snapshot and append them to the log (unless learn=false).

    The body is one event ({task, x, ...}) or a batch ({items: [...]}). An unseen
    task is scored as a fresh task. The returned event_id is what POST /label refers to.
    """
    ctx = get_context(request)
    principal = authorize(request, Role.PRODUCER)
    data = parse_json(await read_body(request))
    if isinstance(data, dict) and "items" in data:
        batch = parse_body(PredictBatchRequest, data)
        check_model(principal, ctx.model_name(batch.model))
        answer = await predicting.predict_batch(ctx, batch)
    else:
        one = parse_body(PredictRequest, data)
        check_model(principal, ctx.model_name(one.model))
        answer = await predicting.predict(ctx, one)
    return json_response(answer)
