"""Writes produced by applying entries: label requests and dead letters.

The :class:`~service.worker.apply.Applier` collects them here; the worker
flushes them in one pipeline per read (:mod:`service.worker.reading`).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from service.store.codec import BINARY_FIELDS

__all__ = ["Outbox", "dead_letter_fields"]

_BINARY = frozenset(name.encode() for name in BINARY_FIELDS)


@dataclass
class Outbox:
    """Writes produced by applying entries, flushed by the worker after each read."""

    requests: list[dict[str, str]] = field(default_factory=list)
    dead: list[dict[str, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.requests or self.dead)

    def clear(self) -> None:
        """Forget everything (after a flush)."""
        self.requests.clear()
        self.dead.clear()


def _field_text(key: bytes, value: Any) -> Any:
    if isinstance(value, bytes):
        if key in _BINARY:
            return {"base64": base64.b64encode(value).decode()}
        try:
            return value.decode()
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(value).decode()}
    return str(value)


def dead_letter_fields(entry_id: str, reason: str, flat: Sequence[Any]) -> dict[str, str]:
    """Fields of a dead-letter entry: the original id, the reason and the original fields."""
    pairs: dict[str, Any] = {}
    for i in range(0, len(flat) - 1, 2):
        key = flat[i] if isinstance(flat[i], bytes) else str(flat[i]).encode()
        pairs[key.decode("utf-8", "replace")] = _field_text(key, flat[i + 1])
    return {"entry": entry_id, "reason": reason, "fields": orjson.dumps(pairs).decode()}
