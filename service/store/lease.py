"""The per-model lease: one worker owns a model at a time.

The lease is the string ``omtl:{m}:lease`` holding the owner's id with a
``PX`` lifetime. The owner renews it well before it expires; a second worker
polls and takes the model over once the lease has expired. Acquire, renew and
release are single atomic steps (Lua compare-and-set, :mod:`service.store.scripts`), and snapshots
are only written while the writer still holds the lease
(:func:`service.store.snapshot.write_snapshot` with ``owner``).
"""

from __future__ import annotations

import os
import socket
import uuid

import redis

from service.store.keys import lease_key
from service.store.scripts import LEASE_ACQUIRE_OR_RENEW, LEASE_RELEASE, LEASE_RENEW

__all__ = ["acquire", "lease_holder", "new_worker_id", "queue_renew", "release"]


def new_worker_id() -> str:
    """A unique worker id: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def acquire(r: redis.Redis, model: str, owner: str, ttl_ms: int) -> bool:
    """Take the lease if it is free, or renew it if ``owner`` holds it; False otherwise."""
    return bool(LEASE_ACQUIRE_OR_RENEW.run(r, [lease_key(model)], [owner, str(int(ttl_ms))]))


def queue_renew(pipe: redis.client.Pipeline, model: str, owner: str, ttl_ms: int) -> None:
    """Queue a renewal in a pipeline (its reply: 1 still held by ``owner`` and extended,
    0 lost or lapsed: a renewal never takes a lapsed lease back)."""
    LEASE_RENEW.queue(pipe, [lease_key(model)], [owner, str(int(ttl_ms))])


def release(r: redis.Redis, model: str, owner: str) -> bool:
    """Give the lease up if ``owner`` holds it."""
    return bool(LEASE_RELEASE.run(r, [lease_key(model)], [owner]))


def lease_holder(r: redis.Redis, model: str) -> str | None:
    """The id of the worker holding the model's lease, or None."""
    v = r.get(lease_key(model))
    if v is None:
        return None
    return v.decode() if isinstance(v, bytes) else str(v)
