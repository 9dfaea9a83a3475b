"""Liveness, readiness and per-model health.

Readiness is the process's: Redis answers. The answer also carries the
server's write durability (:mod:`service.store.durability`). It does not depend on the models,
so one stuck model cannot take every API replica out of its Service. Each
model's health is reported separately (``GET /health/models`` and the gauge
``omtl_model_healthy{model}``, refreshed on every scrape of ``/metrics``): a
model is healthy when a worker heartbeat is fresh (the key
``omtl:{m}:heartbeat``, set by the owner with a TTL) and no worker has marked
it failed (``omtl:{m}:failed``, see :mod:`service.store.failures`). A model with
no snapshot yet is served from its initial state and is healthy once a worker
owns it.
"""

from __future__ import annotations

from typing import Any

from service import metrics
from service.api.context import ApiContext
from service.store import StoreError, keys
from service.store.durability import read_durability_async
from service.store.models import list_models_async

__all__ = ["model_health", "readiness"]


async def readiness(ctx: ApiContext) -> tuple[bool, dict[str, Any]]:
    """``(ready, details)``: ready while Redis answers; details say whether an
    acknowledged write survives a crash of the Redis server."""
    try:
        await ctx.redis.ping()
    except (StoreError, OSError) as exc:
        return False, {"status": "not ready", "redis": False, "error": str(exc)}
    durability = await read_durability_async(ctx.redis)
    metrics.REDIS_WRITE_DURABILITY.set(durability.gauge_value)
    return True, {"status": "ready", "redis": True, "durability": durability.as_dict()}


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


async def model_health(ctx: ApiContext) -> dict[str, Any]:
    """Every model's worker heartbeat and failure, one round trip after the list;
    also sets ``omtl_model_healthy``. Raises the store's errors when Redis is away."""
    names = await list_models_async(ctx.redis)
    async with ctx.redis.pipeline(transaction=False) as p:
        for name in names:
            p.exists(keys.heartbeat_key(name))
            p.hget(keys.failed_key(name), "reason")
        replies = await p.execute(raise_on_error=False)
    models: dict[str, Any] = {}
    for i, name in enumerate(names):
        beat, failure = replies[2 * i], replies[2 * i + 1]
        heartbeat = beat is True or (isinstance(beat, int) and beat > 0)
        reason = _text(failure) if isinstance(failure, bytes | str) else None
        healthy = heartbeat and reason is None
        metrics.MODEL_HEALTHY.labels(name).set(1 if healthy else 0)
        models[name] = {"healthy": healthy, "worker_heartbeat": heartbeat, "failure": reason}
    unhealthy = [n for n, h in models.items() if not h["healthy"]]
    return {"healthy": not unhealthy, "unhealthy": unhealthy, "models": models}
