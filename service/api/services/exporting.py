"""Model export, import and rollback for the HTTP API.

See docs/architecture.md, "Export, import and rollback".

These are rare administrative steps that move whole snapshots (up to hundreds of
megabytes): each runs in a worker thread with a short-lived synchronous client,
never on the event loop, through :mod:`service.store.export`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
import redis

from service.api.context import ApiContext
from service.api.errors import BadInput, Conflict, NotFound
from service.api.services import modelling
from service.store.connection import connect
from service.store.export import (
    ModelExists,
    UnknownVersion,
    export_model,
    import_model,
    rollback_model,
    snapshot_versions,
)
from service.store.models import ModelLimits
from service.store.snapshot import SnapshotInvalid

__all__ = ["export", "import_file", "rollback", "versions"]

T = TypeVar("T")


async def _in_thread(ctx: ApiContext, step: Callable[[redis.Redis], T]) -> T:
    """Run ``step`` with a synchronous client of its own, in a worker thread."""
    url = str(ctx.settings.redis_url)

    def run() -> T:
        client = connect(url, reply_s=300.0)
        try:
            return step(client)
        finally:
            client.close()

    return await anyio.to_thread.run_sync(run)


def _limits(ctx: ApiContext) -> ModelLimits:
    return ModelLimits.from_settings(ctx.settings)


async def export(ctx: ApiContext, name: str) -> bytes:
    """The export file of model ``name``."""
    try:
        return await _in_thread(ctx, lambda r: export_model(r, name, _limits(ctx)))
    except KeyError:
        raise NotFound(f"unknown model {name!r}") from None
    except SnapshotInvalid as exc:
        raise Conflict(f"model {name!r} cannot be exported: {exc}") from None


async def import_file(ctx: ApiContext, data: bytes, name: str | None) -> dict[str, Any]:
    """Create a model from an export file; its description."""
    try:
        target, _ = await _in_thread(ctx, lambda r: import_model(r, data, name, _limits(ctx)))
    except ModelExists as exc:
        raise Conflict(f"{exc}: import it under another name (as=...) or delete it first") from None
    except ValueError as exc:  # not an export file, invalid name, over the limits
        raise BadInput(str(exc)) from None
    ctx.cache.forget(target)
    return await modelling.describe(ctx, target)


async def versions(ctx: ApiContext, name: str) -> list[int]:
    """Snapshot versions a rollback of ``name`` can restore, newest first."""
    return await _in_thread(ctx, lambda r: snapshot_versions(r, name))


async def rollback(ctx: ApiContext, name: str, version: int) -> dict[str, Any]:
    """Restore snapshot ``version`` of ``name``, discarding the log after it; the model's
    description afterwards."""
    try:
        await _in_thread(ctx, lambda r: rollback_model(r, name, version, _limits(ctx)))
    except KeyError:
        raise NotFound(f"unknown model {name!r}") from None
    except UnknownVersion as exc:
        raise NotFound(str(exc)) from None
    except SnapshotInvalid as exc:
        raise Conflict(f"snapshot {version} of {name!r} cannot be restored: {exc}") from None
    ctx.cache.forget(name)
    return await modelling.describe(ctx, name)
