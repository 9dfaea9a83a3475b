"""The API's key check: cached in-process, revocations seen within a second.

(docs/architecture.md, "Authentication and roles".) A key's record is read
from Redis once and cached for ``cache_s`` seconds, so a request with a known
key costs a SHA-256 and a constant-time comparison, no round trip. Revocation
reaches every API process through a **counter** in Redis that every
revocation bumps: a process reads it at most once per ``check_every_s`` (one
``GET``, shared by the requests that arrive meanwhile) and drops its whole
cache when it changed. A revoked key is therefore refused by every replica
within ``check_every_s`` (default 1 s) of the revocation. Unknown ids are not
cached: a key created a moment ago works at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from service.auth.roles import Principal
from service.auth.store import KeyRecord, get_key, revocation_version
from service.auth.tokens import matches, token_id
from service.store import AsyncStore

__all__ = ["KeyVerifier"]


@dataclass(slots=True)
class _Cached:
    record: KeyRecord
    principal: Principal
    expires: float


class KeyVerifier:
    """Verify presented keys against Redis, with the cache of the module docstring."""

    def __init__(
        self,
        redis: AsyncStore,
        *,
        cache_s: float = 30.0,
        check_every_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.redis = redis
        self.cache_s = cache_s
        self.check_every_s = check_every_s
        self.clock = clock
        self._cache: dict[str, _Cached] = {}
        self._version: bytes | None = None
        self._checked = float("-inf")
        self._checking: asyncio.Future[None] | None = None

    async def verify(self, token: str) -> Principal | None:
        """The principal of a live key, None for a malformed, unknown or revoked one."""
        key_id = token_id(token)
        if key_id is None:
            return None
        now = self.clock()
        if now - self._checked >= self.check_every_s:
            await self._check_revocations(now)
        cached = self._cache.get(key_id)
        if cached is None or cached.expires <= now:
            record = await get_key(self.redis, key_id)
            if record is None:
                self._cache.pop(key_id, None)
                return None
            cached = _Cached(record, record.principal(), now + self.cache_s)
            self._cache[key_id] = cached
        return cached.principal if matches(token, cached.record.hash) else None

    async def _check_revocations(self, now: float) -> None:
        """Read the revocation counter (one read for all concurrent callers)."""
        if self._checking is not None:
            await asyncio.shield(self._checking)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._checking = future
        try:
            version = await revocation_version(self.redis)
            if version != self._version:
                self._cache.clear()
                self._version = version
            self._checked = now
            future.set_result(None)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiting callers re-raise it themselves
            raise
        finally:
            self._checking = None

    def forget(self) -> None:
        """Drop every cached key (the next request reads the counter again)."""
        self._cache.clear()
        self._checked = float("-inf")
