"""``POST /predict`` (single and batch form)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from service.api.context import ApiContext
from service.api.deps import get_context
from service.api.jsonio import json_response, parse_body, parse_json
from service.api.openapi import ERRORS, raw_body
from service.api.schemas import (
    PredictBatchRequest,
    PredictBatchResponse,
    PredictRequest,
    PredictResponse,
)
from service.api.services import predicting

router = APIRouter(tags=["predict"])


async def predict_answer(ctx: ApiContext, body: bytes) -> dict[str, Any]:
    """The answer to a ``/predict`` body: one event, or a batch (``{"items": [...]}``).

    Shared by the route below and :class:`service.api.fastpath.PredictFastPath`,
    which serves the same endpoint without the routing layers.
    """
    data = parse_json(body)
    if isinstance(data, dict) and "items" in data:
        return await predicting.predict_batch(ctx, parse_body(PredictBatchRequest, data))
    return await predicting.predict(ctx, parse_body(PredictRequest, data))


@router.post(
    "/predict",
    response_model=PredictResponse | PredictBatchResponse,
    responses=ERRORS,
    openapi_extra=raw_body(PredictRequest, PredictBatchRequest),
)
async def predict(request: Request) -> Response:
    """Score events with the latest snapshot and append them to the log (unless learn=false).

    The body is one event ({task, x, ...}) or a batch ({items: [...]}). An unseen
    task is scored as a fresh task. The returned event_id is what POST /label refers to.
    """
    return json_response(await predict_answer(get_context(request), await request.body()))
