"""Everything a request needs, built once by the app's lifespan: settings, Redis, caches.

The API talks to Redis asynchronously. ``/predict`` does one round trip and
microseconds of numpy, so handling it on the event loop is cheaper than a hop
to a thread pool, and the label-request stream (server-sent events) holds a
blocking ``XREAD`` per subscriber, which only an asyncio client can do without a
thread per subscriber. Reads and administration use ``redis.asyncio``; the
write scripts of the hot path go through :class:`service.store.resp.RespConnection`
(for ``redis://`` URLs), which costs a fraction of the CPU per call and
pipelines concurrent requests on one connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from service.api.cache import ModelCache
from service.settings import Settings
from service.store import AsyncStore, connect_async
from service.store.group_commit import GroupCommit
from service.store.models import ModelLimits
from service.store.resp import RespConnection
from service.store.scripts import LuaScript

__all__ = ["ApiContext"]


@dataclass
class ApiContext:
    """The per-app state shared by every request."""

    settings: Settings
    redis: AsyncStore
    cache: ModelCache
    fast: RespConnection | None
    appender: GroupCommit = field(init=False)

    def __post_init__(self) -> None:
        self.appender = GroupCommit(self.run_script, self.fast, self.settings.stream_maxlen)

    @classmethod
    def connect(cls, settings: Settings) -> ApiContext:
        """Create the Redis client (no I/O yet) and register the scripts."""
        if not settings.redis_url:
            raise RuntimeError(
                "REDIS_URL is not set: run `omtl up` (which starts an embedded server) "
                "or point REDIS_URL at a Redis server"
            )
        client = connect_async(settings.redis_url)
        return cls(
            settings=settings,
            redis=client,
            cache=ModelCache(client, ModelLimits.from_settings(settings)),
            fast=RespConnection(settings.redis_url, settings.redis_timeout_s)
            if settings.redis_url.startswith("redis://")
            else None,
        )

    async def run_script(self, script: LuaScript, keys: list[str], args: list[Any]) -> Any:
        """Run ``script`` atomically on the server (one round trip unless it must be loaded)."""
        return await script.run_async(self.redis, self.fast, keys, args)

    def model_name(self, given: str | None) -> str:
        """The model a request addresses: the one named, else the default model."""
        return given or self.settings.default_model

    async def close(self) -> None:
        """Close the Redis connections."""
        if self.fast is not None:
            self.fast.close()
        await self.redis.aclose()
