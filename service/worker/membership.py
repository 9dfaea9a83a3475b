"""The live workers: a heartbeat per worker in one sorted set, and leaving it.

Each worker records its heartbeat in ``omtl:workers`` (member: its id, score:
the server's clock in ms) every lease-keeper tick, with the same call dropping
members silent for longer than the member lifetime and returning the live ones
(:data:`service.store.scripts.MEMBER_BEAT`). The server's clock, not the
workers', decides who is live, so skewed worker clocks do not matter. A clean
stop removes the worker at once (:func:`leave`); a crashed one drops out after
the lifetime, and its models' leases expire on their own (fencing is the
leases' job, never the membership's: membership only decides who *tries* to
take a free model). See ``docs/scaling.md``, "Assigning models to workers".
"""

from __future__ import annotations

from typing import Any

from service.store import Store, keys
from service.store.scripts import MEMBER_BEAT

__all__ = ["beat", "leave", "live_members", "queue_beat"]


def _texts(reply: Any) -> list[str]:
    return sorted(v.decode() if isinstance(v, bytes) else str(v) for v in reply or [])


def beat(r: Store, member: str, lifetime_ms: int) -> list[str]:
    """Record ``member``'s heartbeat; the live members (``member`` included)."""
    return _texts(MEMBER_BEAT.run(r, [keys.workers_key()], [member, str(int(lifetime_ms))]))


def queue_beat(pipe: Any, member: str, lifetime_ms: int) -> None:
    """Queue :func:`beat` in a pipeline (its reply: the live members, as raw bytes)."""
    MEMBER_BEAT.queue(pipe, [keys.workers_key()], [member, str(int(lifetime_ms))])


def live_members(reply: Any) -> list[str]:
    """The member ids of a queued :func:`queue_beat`'s reply, sorted."""
    return _texts(reply)


def leave(r: Store, member: str) -> None:
    """Remove ``member`` from the live workers (a clean stop)."""
    r.zrem(keys.workers_key(), member)
