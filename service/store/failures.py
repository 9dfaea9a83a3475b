"""Failed models: why a worker cannot load a model, for the API and operators to see.

When a model's configuration or snapshot cannot be loaded (malformed, foreign,
over the model's limits), the worker leaves it alone, retries it every
``OMTL_MODEL_RETRY_S`` seconds and records the reason in the hash
``omtl:{m}:failed`` (``reason``, ``since``, ``worker``). The record lives for a
few retry periods and is rewritten on every failed retry, so a record of a
model deleted meanwhile disappears by itself; a successful load deletes it
(docs/architecture.md, "Leases and fencing", Failures).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from service.store import AsyncStore, Store, keys

__all__ = ["Failure", "clear_failed", "mark_failed", "read_failed", "read_failed_async"]


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a model is failed, since when (epoch seconds) and which worker saw it."""

    reason: str
    since: float
    worker: str


def mark_failed(r: Store, name: str, reason: str, worker: str, ttl_s: float) -> None:
    """Record that ``worker`` cannot load ``name`` (kept ``ttl_s`` seconds unless renewed);
    the first failure's time is kept while the model stays failed."""
    key = keys.failed_key(name)
    with r.pipeline(transaction=True) as p:
        p.hsetnx(key, "since", repr(time.time()))
        p.hset(key, mapping={"reason": reason, "worker": worker})
        p.expire(key, max(1, int(ttl_s)))
        p.execute()


def clear_failed(r: Store, name: str) -> None:
    """The model loads again: remove its failure record."""
    r.delete(keys.failed_key(name))


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _from_hash(h: dict[Any, Any]) -> Failure | None:
    if not h:
        return None
    f = {_text(k): _text(v) for k, v in h.items()}
    try:
        since = float(f.get("since", "0"))
    except ValueError:
        since = 0.0
    return Failure(f.get("reason", ""), since, f.get("worker", ""))


def read_failed(r: Store, name: str) -> Failure | None:
    """The model's failure record, or None while it loads."""
    return _from_hash(r.hgetall(keys.failed_key(name)))


async def read_failed_async(r: AsyncStore, name: str) -> Failure | None:
    """:func:`read_failed` for an asyncio client."""
    return _from_hash(await r.hgetall(keys.failed_key(name)))
