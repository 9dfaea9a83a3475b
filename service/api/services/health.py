"""Liveness and readiness.

Ready means: Redis answers, and every model has a fresh worker heartbeat (the
key ``omtl:{m}:heartbeat`` exists; the worker sets it with a TTL). A model with
no snapshot yet is served from its initial state, so it does not block
readiness.
"""

from __future__ import annotations

from typing import Any

from service.api.context import ApiContext
from service.store import StoreError, keys
from service.store.models import list_models_async

__all__ = ["readiness"]


async def readiness(ctx: ApiContext) -> tuple[bool, dict[str, Any]]:
    """``(ready, details)``."""
    try:
        await ctx.redis.ping()
        names = await list_models_async(ctx.redis)
        async with ctx.redis.pipeline(transaction=False) as p:
            for name in names:
                p.exists(keys.heartbeat_key(name))
            beats = await p.execute()
    except (StoreError, OSError) as exc:
        return False, {"status": "not ready", "redis": False, "error": str(exc)}
    workers = {name: bool(b) for name, b in zip(names, beats, strict=True)}
    ready = all(workers.values())
    missing = [n for n, ok in workers.items() if not ok]
    details: dict[str, Any] = {
        "status": "ready" if ready else "not ready",
        "redis": True,
        "worker_heartbeat": workers,
    }
    if missing:
        details["error"] = f"no fresh worker heartbeat for model(s): {', '.join(missing)}"
    return ready, details
