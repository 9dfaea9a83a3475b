"""Whether the Redis server keeps an acknowledged write through a crash of its own.

The service acknowledges an event once Redis has answered its append. Whether
that answer means "on disk" depends on the server's persistence settings, which
the service cannot change on a server it does not run: with ``appendonly yes``
and ``appendfsync always`` the server fsyncs its append-only file before every
reply, so an acknowledged write survives ``kill -9`` and power loss; with
``everysec`` up to about a second of acknowledged writes is lost, and without
the AOF everything since the last RDB save. The embedded server runs with
``always`` by default (``OMTL_REDIS_APPENDFSYNC``). The API reports what it reads
here in ``GET /health/ready`` and the gauge ``omtl_redis_write_durability``; the
worker logs a warning at start when the guarantee does not hold
(docs/architecture.md, "Durability of acknowledged writes").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from service.store.connection import AsyncStore, Store, StoreError

__all__ = ["Durability", "read_durability", "read_durability_async", "warn_unless_durable"]

log = logging.getLogger("omtl.store")


def _text(v: Any) -> str | None:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return None if v is None else str(v)


@dataclass(frozen=True)
class Durability:
    """The server's ``appendonly`` and ``appendfsync`` (None when it will not say)."""

    appendonly: str | None
    appendfsync: str | None

    @classmethod
    def from_config(cls, reply: Any) -> Durability:
        """From a ``CONFIG GET appendonly appendfsync`` reply (a dict or a flat list)."""
        if isinstance(reply, dict):
            pairs = {_text(k): _text(v) for k, v in reply.items()}
        elif isinstance(reply, list | tuple):
            pairs = {_text(reply[i]): _text(reply[i + 1]) for i in range(0, len(reply) - 1, 2)}
        else:
            pairs = {}
        return cls(pairs.get("appendonly"), pairs.get("appendfsync"))

    @property
    def known(self) -> bool:
        """Whether the server answered ``CONFIG GET`` (managed services may refuse it)."""
        return self.appendonly is not None

    @property
    def survives_crash(self) -> bool | None:
        """True when every acknowledged write is fsynced before its reply; None if unknown."""
        if not self.known:
            return None
        return self.appendonly == "yes" and self.appendfsync == "always"

    @property
    def gauge_value(self) -> int:
        """1 durable, 0 acknowledged writes can be lost on a crash, -1 unknown."""
        survives = self.survives_crash
        return -1 if survives is None else int(survives)

    def as_dict(self) -> dict[str, Any]:
        """The form ``GET /health/ready`` reports."""
        return {
            "appendonly": self.appendonly,
            "appendfsync": self.appendfsync,
            "acknowledged_writes_survive_a_server_crash": self.survives_crash,
        }


_UNKNOWN = Durability(None, None)


def read_durability(r: Store) -> Durability:
    """The server's persistence settings, or unknown when ``CONFIG`` is not allowed."""
    try:
        return Durability.from_config(r.config_get("append*"))
    except StoreError:
        return _UNKNOWN


async def read_durability_async(r: AsyncStore) -> Durability:
    """:func:`read_durability` for the API's asyncio client."""
    try:
        return Durability.from_config(await r.config_get("append*"))
    except StoreError:
        return _UNKNOWN


def warn_unless_durable(durability: Durability, who: str) -> None:
    """Log, once at start, that a server crash can lose acknowledged writes."""
    if durability.survives_crash is False:
        log.warning(
            "%s: the Redis server runs appendonly=%s appendfsync=%s: a crash of the server "
            "can lose acknowledged writes; set 'appendonly yes' and 'appendfsync always' "
            "for the service's guarantee",
            who,
            durability.appendonly,
            durability.appendfsync,
        )
    elif durability.survives_crash is None:
        log.info("%s: the Redis server does not report its persistence settings", who)
