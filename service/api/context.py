"""Everything a request needs, built once by the app's lifespan: settings, Redis, caches.

The API talks to Redis through ``redis.asyncio``: ``/predict`` does one round
trip and microseconds of numpy, so handling it on the event loop is cheaper
than a hop to a thread pool, and the label-request stream (server-sent events)
holds a blocking ``XREAD`` per subscriber, which only an asyncio client can do
without a thread per subscriber.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis.asyncio as aredis
from redis.commands.core import AsyncScript

from service.api.cache import ModelCache
from service.api.scripts import APPEND_EVENTS, APPEND_LABEL
from service.settings import Settings

__all__ = ["ApiContext"]


@dataclass
class ApiContext:
    """The per-app state shared by every request."""

    settings: Settings
    redis: aredis.Redis
    cache: ModelCache
    append_events: AsyncScript
    append_label: AsyncScript

    @classmethod
    def connect(cls, settings: Settings) -> ApiContext:
        """Create the Redis client (no I/O yet) and register the scripts."""
        if not settings.redis_url:
            raise RuntimeError(
                "REDIS_URL is not set: run `omtl up` (which starts an embedded server) "
                "or point REDIS_URL at a Redis server"
            )
        client = aredis.Redis.from_url(settings.redis_url, decode_responses=False)
        return cls(
            settings=settings,
            redis=client,
            cache=ModelCache(client),
            append_events=client.register_script(APPEND_EVENTS),
            append_label=client.register_script(APPEND_LABEL),
        )

    def model_name(self, given: str | None) -> str:
        """The model a request addresses: the one named, else the default model."""
        return given or self.settings.default_model

    async def close(self) -> None:
        """Close the Redis connections."""
        await self.redis.aclose()
