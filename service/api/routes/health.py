"""``/health/live``, ``/health/ready``, ``/health/models``, ``/`` and ``/metrics``.

The probes and ``/metrics`` are public; ``/`` and ``/health/models`` need a key of
any role and list only the models the key may use.
"""

from __future__ import annotations

import contextlib
from typing import Any

from fastapi import APIRouter, Request
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from starlette.responses import Response

import learners
from service import __version__
from service.api.access import authorize, visible_models
from service.api.deps import ContextDep
from service.api.jsonio import json_response
from service.api.openapi import needs
from service.api.schemas import ServiceInfo
from service.api.services.health import model_health, readiness
from service.auth import Role
from service.store import STORE_UNAVAILABLE
from service.store.models import list_models_async

router = APIRouter(tags=["service"])


@router.get("/", response_model=ServiceInfo, openapi_extra=needs(Role.VIEWER))
async def info(ctx: ContextDep, request: Request) -> dict[str, Any]:
    """Service name and version, where the docs and metrics are, models and learners."""
    principal = authorize(request, Role.VIEWER)
    return {
        "name": "omtl",
        "version": __version__,
        "docs": "/docs",
        "metrics": "/metrics",
        "models": visible_models(principal, await list_models_async(ctx.redis)),
        "default_model": ctx.settings.default_model or None,
        "learners": [i.name for i in learners.available()],
    }


@router.get("/health/live")
async def live() -> dict[str, str]:
    """The process is up."""
    return {"status": "alive"}


@router.get("/health/ready", responses={503: {"description": "Redis does not answer."}})
async def ready(ctx: ContextDep) -> Response:
    """The process can serve: Redis answers (else 503). Models do not matter here:
    their health is ``/health/models``."""
    ok, details = await readiness(ctx)
    return json_response(details, status_code=200 if ok else 503)


@router.get(
    "/health/models",
    responses={503: {"description": "A model has no live worker or is failed, or no Redis."}},
    openapi_extra=needs(Role.VIEWER),
)
async def models_health(ctx: ContextDep, request: Request) -> Response:
    """Each model's health: a fresh worker heartbeat and not failed (with the reason).
    200 when every model the key may use is healthy, else 503 with the same body."""
    principal = authorize(request, Role.VIEWER)
    health = await model_health(ctx)
    if principal.models is not None:
        shown = set(visible_models(principal, list(health["models"])))
        health["models"] = {n: h for n, h in health["models"].items() if n in shown}
        health["unhealthy"] = [n for n in health["unhealthy"] if n in shown]
        health["healthy"] = not health["unhealthy"]
    return json_response(health, status_code=200 if health["healthy"] else 503)


@router.get("/metrics", response_class=Response)
async def metrics(ctx: ContextDep) -> Response:
    """Prometheus metrics of this process (and of an in-process worker under `omtl up`);
    ``omtl_model_healthy`` is refreshed first."""
    with contextlib.suppress(*STORE_UNAVAILABLE):  # the metrics still answer without Redis
        await model_health(ctx)
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
