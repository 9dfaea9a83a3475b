"""Everything that talks to Redis below the HTTP and worker layers.

* :mod:`~service.store.keys`: key names of a model;
* :mod:`~service.store.codec`: the one reader and writer of log entries;
* :mod:`~service.store.models`: model configurations;
* :mod:`~service.store.snapshot`: snapshots of a model's state;
* :mod:`~service.store.lease`: the per-model worker lease;
* :mod:`~service.store.scripts`: every Lua script, called one way;
* :mod:`~service.store.resp` and :mod:`~service.store.group_commit`: the API's
  pipelined connection and the group commit of appends;
* :mod:`~service.store.connection`: clients and error types for the layers above.
"""

from __future__ import annotations

from service.store.connection import (
    STORE_UNAVAILABLE,
    AsyncStore,
    Store,
    StoreError,
    StoreReplyError,
    StoreUnavailable,
    connect,
    connect_async,
    connect_async_reader,
    redact_url,
)

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
