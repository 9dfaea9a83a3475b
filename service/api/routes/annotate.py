"""``GET /annotate`` (the page) and ``GET /models/{m}/queries/pending``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from service.api.deps import ContextDep
from service.api.openapi import ERRORS, needs
from service.api.pages import page_response
from service.api.routes.models import ModelName, may
from service.api.schemas import ENTRY_ID_PATTERN, WithinStreamIds
from service.api.services.pending import pending_requests
from service.auth import Role

router = APIRouter(tags=["queries"])


@router.get("/annotate", response_class=HTMLResponse, include_in_schema=False)
async def annotate_page() -> HTMLResponse:
    """The annotator page (assets under /static/pages, no CDN)."""
    return page_response("annotate")


@router.get(
    "/models/{model}/queries/pending",
    responses={404: ERRORS[404]},
    openapi_extra=needs(Role.ANNOTATOR),
)
async def pending(
    ctx: ContextDep,
    model: ModelName,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many.")] = 100,
    scan: Annotated[
        int, Query(ge=1, le=1_000_000, description="Read at most this many requests.")
    ] = 100_000,
    start: Annotated[
        str,
        Query(
            pattern=rf"^(-|{ENTRY_ID_PATTERN})$",
            description="Read from this stream id on (a request once answered stays answered: "
            "a client passes its oldest pending id, or the last scanned_to, to skip the rest).",
        ),
        WithinStreamIds,
    ] = "-",
) -> dict[str, Any]:
    """Label requests issued and not yet labelled, oldest first, with the prediction
    (the sign of the score, or the score for regression) and the producer's ``ref``;
    like ``GET /queries``, for annotators."""
    may(request, Role.ANNOTATOR, model)
    return await pending_requests(ctx, model, limit, scan, start)
