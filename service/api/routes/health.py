"""``/health/live``, ``/health/ready``, ``/`` and ``/metrics``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.responses import Response

import learners
from service import __version__
from service.api.deps import ContextDep
from service.api.jsonio import json_response
from service.api.schemas import ServiceInfo
from service.api.services.health import readiness
from service.store.models import list_models_async

router = APIRouter(tags=["service"])


@router.get("/", response_model=ServiceInfo)
async def info(ctx: ContextDep) -> dict[str, Any]:
    """Service name and version, where the docs and metrics are, models and learners."""
    return {
        "name": "omtl",
        "version": __version__,
        "docs": "/docs",
        "metrics": "/metrics",
        "models": await list_models_async(ctx.redis),
        "default_model": ctx.settings.default_model or None,
        "learners": [i.name for i in learners.available()],
    }


@router.get("/health/live")
async def live() -> dict[str, str]:
    """The process is up."""
    return {"status": "alive"}


@router.get("/health/ready", responses={503: {"description": "Redis or a worker is missing."}})
async def ready(ctx: ContextDep) -> Response:
    """Redis answers and every model has a fresh worker heartbeat (else 503)."""
    ok, details = await readiness(ctx)
    return json_response(details, status_code=200 if ok else 503)


@router.get("/metrics", response_class=Response)
async def metrics() -> Response:
    """Prometheus metrics of this process (and of an in-process worker under `omtl up`)."""
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
