"""Everything a request needs, built once by the app's lifespan: settings, Redis, caches.

The API talks to Redis asynchronously. ``/predict`` does one round trip and
microseconds of numpy, so handling it on the event loop is cheaper than a hop
to a thread pool, and the label-request stream (server-sent events) holds a
blocking ``XREAD`` per subscriber, which only an asyncio client can do without a
thread per subscriber. Reads and administration use ``redis.asyncio``; the
write scripts of the hot path go through :class:`service.store.resp.RespConnection`
(for ``redis://`` URLs), which costs a fraction of the CPU per call and
pipelines concurrent requests on one connection; for a ``redis+cluster://`` URL,
through :class:`service.store.cluster.ClusterResp` (one such connection per
primary, commands routed by slot).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from service.api.cache import ModelCache
from service.api.services.fanout import QueryFanouts
from service.settings import Settings
from service.store import AsyncStore, connect_async
from service.store.cluster import ClusterResp, FastConnection, is_cluster_url
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
    fast: FastConnection | None
    appender: GroupCommit = field(init=False)
    #: one label-request reader per model, shared by the model's ``GET /queries`` subscribers
    queries: QueryFanouts = field(init=False)

    def __post_init__(self) -> None:
        self.appender = GroupCommit(self.run_script, self.fast, self.settings.max_backlog)
        self.queries = QueryFanouts(str(self.settings.redis_url), self.settings.queries_block_s)

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
            fast=_fast_connection(settings),
        )

    async def run_script(self, script: LuaScript, keys: list[str], args: list[Any]) -> Any:
        """Run ``script`` atomically on the server (one round trip unless it must be loaded)."""
        return await script.run_async(self.redis, self.fast, keys, args)

    def model_name(self, given: str | None) -> str:
        """The model a request addresses: the one named, else the default model."""
        return given or self.settings.default_model

    async def close(self) -> None:
        """Stop the label-request readers and close the Redis connections."""
        await self.queries.close()
        if self.fast is not None:
            self.fast.close()
        await self.redis.aclose()


def _fast_connection(settings: Settings) -> FastConnection | None:
    """The hot path's connection: one server (``redis://``), a cluster, or none (TLS, sockets)."""
    url = str(settings.redis_url)
    if is_cluster_url(url):
        return ClusterResp(url, settings.redis_timeout_s)
    if url.startswith("redis://"):
        return RespConnection(url, settings.redis_timeout_s)
    return None
