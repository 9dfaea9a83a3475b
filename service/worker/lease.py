"""The per-model lease: one worker owns a model at a time.

The lease is the string ``omtl:{m}:lease`` holding the owner's id with a
``PX`` lifetime. The owner renews it well before it expires; a second worker
polls and takes the model over once the lease has expired. Acquire, renew and
release are single atomic steps (SET NX / Lua compare-and-set), and snapshots
are only written while the writer still holds the lease
(:func:`service.snapshot.write_snapshot` with ``owner``).
"""

from __future__ import annotations

import os
import socket
import uuid

import redis

from service.keys import lease_key

__all__ = ["acquire", "lease_holder", "new_worker_id", "release"]

# KEYS: lease. ARGV: owner, ttl ms. 1 = held by owner now (acquired or renewed), 0 = other owner.
_ACQUIRE_OR_RENEW = """
local cur = redis.call('GET', KEYS[1])
if not cur then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def new_worker_id() -> str:
    """A unique worker id: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def acquire(r: redis.Redis, model: str, owner: str, ttl_ms: int) -> bool:
    """Take the lease if it is free, or renew it if ``owner`` holds it; False otherwise."""
    return bool(r.eval(_ACQUIRE_OR_RENEW, 1, lease_key(model), owner, str(int(ttl_ms))))


def release(r: redis.Redis, model: str, owner: str) -> bool:
    """Give the lease up if ``owner`` holds it."""
    return bool(r.eval(_RELEASE, 1, lease_key(model), owner))


def lease_holder(r: redis.Redis, model: str) -> str | None:
    """The id of the worker holding the model's lease, or None."""
    v = r.get(lease_key(model))
    if v is None:
        return None
    return v.decode() if isinstance(v, bytes) else str(v)
