"""Lease upkeep of the models a worker owns: renew, heartbeat, follow the configuration.

Every ``maintain`` tick one pipeline renews the lease of every owned model,
reads its configuration generation and writes its heartbeat
(:func:`renew_owned`); the worker then drops the models it lost, that were
deleted or reconfigured, and acquires the free ones (:mod:`service.store.lease`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from service.store import Store, keys
from service.store.lease import queue_renew

__all__ = ["Renewal", "as_generation", "renew_owned"]


def as_generation(value: object) -> int | None:
    """A config's ``generation`` field as read from Redis: None when the model is gone,
    -1 when the field is not an integer (crafted: the model is reloaded, and fails)."""
    if value is None:
        return None
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return -1


@dataclass(frozen=True, slots=True)
class Renewal:
    """One owned model after a renewal: whether the lease is still ours, and its generation."""

    name: str
    held: bool
    generation: int | None

    def verdict(self, loaded_generation: int) -> str | None:
        """Why the worker must let the model go, or None to keep it."""
        if not self.held:
            return "lease lost to another worker"
        if self.generation is None:
            return "model deleted"
        if self.generation != loaded_generation:
            return "model reconfigured; starting afresh"
        return None


def renew_owned(
    r: Store, names: Sequence[str], owner: str, ttl_ms: int, heartbeat_ttl_s: int
) -> list[Renewal]:
    """Renew the leases of ``names``, read their generations and write their heartbeats."""
    if not names:
        return []
    now = str(time.time())
    with r.pipeline(transaction=False) as p:
        for name in names:
            queue_renew(p, name, owner, ttl_ms)
            p.hget(keys.config_key(name), "generation")
            p.set(keys.heartbeat_key(name), now, ex=heartbeat_ttl_s)
        replies = p.execute()
    out = []
    for i, name in enumerate(names):
        held, generation = replies[3 * i], replies[3 * i + 1]
        out.append(Renewal(name, bool(held), as_generation(generation)))
    return out
