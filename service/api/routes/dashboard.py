"""``GET /dashboard`` (the page), its data, and ``GET /models/{m}/history``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from service.api.deps import ContextDep
from service.api.openapi import ERRORS
from service.api.pages import page_response
from service.api.routes.models import ModelName
from service.api.services import dashboard
from service.api.services.history import read_history

router = APIRouter(tags=["dashboard"])


@router.get("/dashboard", response_class=HTMLResponse, include_in_schema=False)
async def dashboard_page() -> HTMLResponse:
    """The dashboard (assets under /static/pages, no CDN)."""
    return page_response("dashboard")


@router.get("/dashboard/data/{model}", responses={404: ERRORS[404]})
async def dashboard_data(ctx: ContextDep, model: ModelName) -> dict[str, Any]:
    """What the dashboard shows of a model: its description, label requests issued /
    answered / pending, log lag, the most labelled tasks, outlier tasks, the newest
    dead letters, and SVG pictures of the task relations and the learning curves."""
    return await dashboard.summary(ctx, model)


@router.get("/models/{model}/history", responses={404: ERRORS[404]}, tags=["models"])
async def history(
    ctx: ContextDep,
    model: ModelName,
    limit: Annotated[int, Query(ge=1, le=10_000, description="Newest entries to return.")] = 500,
) -> dict[str, Any]:
    """The model's history: periodic counter totals written by the worker, oldest first.

    Each entry has ``ts``, the snapshot ``version``, the scalar ``totals`` and, in
    ``tasks``, the cumulative per-task counters of the tasks that changed since the
    previous entry (``names`` and one list per counter); carry them forward.
    """
    return await read_history(ctx, model, limit)
