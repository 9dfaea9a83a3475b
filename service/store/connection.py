"""Redis clients and the errors of talking to Redis, for the layers above the store.

The API and the worker get their clients here and catch these error types, so
only :mod:`service.store` names the Redis client library.
"""

from __future__ import annotations

import urllib.parse

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
    "connect_async_reader",
    "redact_url",
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


#: Seconds a reply may take beyond a command's own blocking time before the
#: connection counts as lost. redis-py's default socket timeout (5 s) is shorter
#: than many blocking reads; every client here sets its timeout explicitly.
REPLY_MARGIN_S = 10.0
#: Connections of the API's shared asyncio pool; a request that finds them all in
#: use waits (up to :data:`POOL_WAIT_S`) instead of failing.
POOL_CONNECTIONS = 100
#: Reply time of the worker's connection: a snapshot of hundreds of megabytes on a
#: busy machine takes tens of seconds to send (Python's timeout covers a whole send).
SNAPSHOT_REPLY_S = 300.0
POOL_WAIT_S = 10.0


def connect(url: str, *, block_s: float = 0.0, reply_s: float = REPLY_MARGIN_S) -> redis.Redis:
    """A synchronous client for ``url`` (no I/O until the first command).

    ``block_s`` is the longest blocking command the client will send (e.g.
    ``XREAD BLOCK``); its socket timeout is that plus ``reply_s``, the time a
    command may take to send and answer (longer for clients moving snapshots of
    hundreds of megabytes). A ``redis+cluster://`` URL gives a cluster client
    (:mod:`service.store.cluster`).
    """
    if _cluster(url):
        from service.store.cluster import connect_cluster

        return connect_cluster(url, block_s + reply_s, REPLY_MARGIN_S)
    return redis.Redis.from_url(
        url,
        decode_responses=False,
        socket_timeout=block_s + reply_s,
        socket_connect_timeout=REPLY_MARGIN_S,
    )


def connect_async(url: str) -> aredis.Redis:
    """The API's asyncio client for ``url`` (no I/O until the first command).

    A blocking pool: under a burst, requests queue for a connection rather than
    failing with "Too many connections". Its commands do not block server-side
    (the label-request stream has readers of its own, :func:`connect_async_reader`).
    """
    if _cluster(url):
        from service.store.cluster import connect_cluster_async

        return connect_cluster_async(url, REPLY_MARGIN_S, REPLY_MARGIN_S, POOL_CONNECTIONS)
    pool = aredis.BlockingConnectionPool.from_url(
        url,
        decode_responses=False,
        max_connections=POOL_CONNECTIONS,
        timeout=POOL_WAIT_S,
        socket_timeout=REPLY_MARGIN_S,
        socket_connect_timeout=REPLY_MARGIN_S,
    )
    return aredis.Redis(connection_pool=pool)


def connect_async_reader(url: str, block_s: float) -> aredis.Redis:
    """A one-connection asyncio client for blocking reads of up to ``block_s`` seconds.

    Its socket timeout is ``block_s`` plus :data:`REPLY_MARGIN_S`, so an idle
    ``XREAD BLOCK`` is never cut by the client (redis-py's 5 s default would).
    """
    if _cluster(url):
        from service.store.cluster import connect_cluster_async

        return connect_cluster_async(url, block_s + REPLY_MARGIN_S, REPLY_MARGIN_S, 4)
    return aredis.Redis.from_url(
        url,
        decode_responses=False,
        single_connection_client=True,
        socket_timeout=block_s + REPLY_MARGIN_S,
        socket_connect_timeout=REPLY_MARGIN_S,
    )


def redact_url(url: str) -> str:
    """``url`` with its password hidden, for banners and logs.

    >>> redact_url("redis://omtl:s3cret@redis:6379/0")
    'redis://omtl:***@redis:6379/0'
    >>> redact_url("redis://127.0.0.1:6379/0")
    'redis://127.0.0.1:6379/0'
    """
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


# ---------------------------------------------------------------- Redis Cluster hook
def _cluster(url: str) -> bool:
    """Whether ``url`` selects a Redis Cluster (``redis+cluster://``, docs/scaling.md)."""
    return url.startswith("redis+cluster://")
