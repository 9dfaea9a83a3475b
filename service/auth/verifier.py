"""The API's key check: cached in-process, revocations seen within a second.

(docs/architecture.md, "Authentication and roles".) A key's record is read
from Redis once, checked against the presented key's SHA-256, and cached with
that key for ``cache_s`` seconds: a later request with the same key costs one
constant-time comparison with the cached key (no hash, no round trip; hashing
with OpenSSL costs several microseconds on a busy process). The keys live
only in this process's memory, never in Redis or the logs. Revocation
reaches every API process through a **counter** in Redis that every
revocation bumps: a process reads it at most once per ``check_every_s`` (one
``GET``, shared by the requests that arrive meanwhile) and drops its whole
cache when it changed. A revoked key is therefore refused by every replica
within ``check_every_s`` (default 1 s) of the revocation. Unknown ids are not
cached: a key created a moment ago works at once.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass

from service.auth.roles import Principal
from service.auth.store import get_key, revocation_version
from service.auth.tokens import matches, token_id
from service.store import AsyncStore

__all__ = ["KeyVerifier"]


@dataclass(slots=True)
class _Cached:
    token: bytes  # the key that matched the record's hash
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
        now = self.clock()
        if now - self._checked >= self.check_every_s:
            await self._check_revocations(now)
        presented = token.encode()
        cached = self._cache.get(token[5:17]) if token.startswith("omtl_") else None
        if cached is not None and cached.expires > now:
            return cached.principal if hmac.compare_digest(presented, cached.token) else None
        key_id = token_id(token)
        if key_id is None:
            return None
        record = await get_key(self.redis, key_id)
        if record is None or not matches(token, record.hash):
            return None  # a wrong key never replaces the cached right one
        self._cache[key_id] = _Cached(presented, record.principal(), now + self.cache_s)
        return self._cache[key_id].principal

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
