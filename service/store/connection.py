"""Redis clients and the errors of talking to Redis, for the layers above the store.

The API and the worker get their clients here and catch these error types, so
only :mod:`service.store` names the Redis client library.
"""

from __future__ import annotations

import redis
import redis.asyncio as aredis

__all__ = [
    "STORE_UNAVAILABLE",
    "AsyncStore",
    "Store",
    "StoreError",
    "StoreReplyError",
    "StoreUnavailable",
    "connect",
    "connect_async",
]

#: A synchronous client (bytes replies).
Store = redis.Redis
#: An asyncio client (bytes replies).
AsyncStore = aredis.Redis
#: Any error reply or failure of a Redis call.
StoreError = redis.RedisError
#: An error reply from the server.
StoreReplyError = redis.ResponseError
#: Redis cannot be reached (connection refused or lost).
StoreUnavailable = redis.ConnectionError
#: Every error that means "Redis is unreachable now, retry later" (a 503 for the API).
STORE_UNAVAILABLE: tuple[type[Exception], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    ConnectionError,
)


def connect(url: str) -> redis.Redis:
    """A synchronous client for ``url`` (no I/O until the first command)."""
    return redis.Redis.from_url(url, decode_responses=False)


def connect_async(url: str) -> aredis.Redis:
    """An asyncio client for ``url`` (no I/O until the first command)."""
    return aredis.Redis.from_url(url, decode_responses=False)
