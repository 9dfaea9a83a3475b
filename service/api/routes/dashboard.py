"""``GET /dashboard`` (the page), its data, and ``GET /models/{m}/history``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from service.api.deps import ContextDep
from service.api.openapi import ERRORS, needs
from service.api.pages import page_response
from service.api.routes.models import ModelName, may
from service.api.services import dashboard
from service.api.services.history import read_history
from service.auth import Role

router = APIRouter(tags=["dashboard"])


@router.get("/dashboard", response_class=HTMLResponse, include_in_schema=False)
async def dashboard_page() -> HTMLResponse:
    """The dashboard (assets under /static/pages, no CDN)."""
    return page_response("dashboard")


@router.get(
    "/dashboard/data/{model}", responses={404: ERRORS[404]}, openapi_extra=needs(Role.VIEWER)
)
async def dashboard_data(ctx: ContextDep, model: ModelName, request: Request) -> dict[str, Any]:
    """What the dashboard shows of a model: its description, label requests issued /
    answered / pending, log lag, the most labelled tasks, outlier tasks, the newest
    dead letters, and SVG pictures of the task relations and the learning curves."""
    may(request, Role.VIEWER, model)
    return await dashboard.summary(ctx, model)


@router.get(
    "/models/{model}/history",
    responses={404: ERRORS[404]},
    tags=["models"],
    openapi_extra=needs(Role.VIEWER),
)
async def history(
    ctx: ContextDep,
    model: ModelName,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=10_000, description="Newest entries to return.")] = 500,
) -> dict[str, Any]:
    """The model's history: periodic counter totals written by the worker, oldest first.

    Each entry has ``ts``, the snapshot ``version``, the scalar ``totals`` and, in
    ``tasks``, the cumulative per-task counters of the tasks that changed since the
    previous entry (``names`` and one list per counter); carry them forward.
    """
    may(request, Role.VIEWER, model)
    return await read_history(ctx, model, limit)
