"""Per-key token buckets for ``POST /label`` and ``POST /events``.

(docs/architecture.md, "Authentication and roles".) Each key has a bucket of
``burst`` requests refilled at ``rate`` requests per second. :class:`RateLimiter`
keeps the buckets **in each API process** (no round trip; with N replicas
behind a load balancer a key may send up to N times the rate);
:class:`SharedRateLimiter` keeps them in Redis (one script call per request,
one limit across every replica). A request that finds the bucket empty is
refused with 429 and ``Retry-After`` (whole seconds until a request fits again).

>>> t = [0.0]
>>> bucket = RateLimiter(rate=2.0, burst=2, clock=lambda: t[0])
>>> [bucket.wait_s("k") for _ in range(3)]
[0.0, 0.0, 0.5]
>>> t[0] = 0.5
>>> bucket.wait_s("k")
0.0
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from service.store import keys
from service.store.scripts import RATE_TAKE, LuaScript

__all__ = ["RateLimiter", "SharedRateLimiter"]

#: Runs a Lua script: ``(script, keys, args) -> reply`` (the API's ``ApiContext.run_script``).
ScriptRunner = Callable[[LuaScript, list[str], list[Any]], Awaitable[Any]]


class RateLimiter:
    """Token buckets by key id; ``rate`` 0 means no limit."""

    #: Buckets kept at most; full buckets are dropped when there are more.
    MAX_BUCKETS = 100_000

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def wait_s(self, key: str) -> float:
        """Take one request from ``key``'s bucket: 0.0 if it fits, else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        tokens, last = self._buckets.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        if tokens >= 1.0:
            self._store(key, tokens - 1.0, now)
            return 0.0
        self._store(key, tokens, now)
        return (1.0 - tokens) / self.rate

    async def wait(self, key: str) -> float:
        """:meth:`wait_s` (the interface :class:`SharedRateLimiter` shares)."""
        return self.wait_s(key)

    def _store(self, key: str, tokens: float, now: float) -> None:
        if len(self._buckets) >= self.MAX_BUCKETS and key not in self._buckets:
            full = [
                k
                for k, (t, last) in self._buckets.items()
                if t + (now - last) * self.rate >= self.burst
            ]
            for k in full:
                del self._buckets[k]
        self._buckets[key] = (tokens, now)


class SharedRateLimiter:
    """Token buckets in Redis, one per key and route, shared by every API process."""

    def __init__(self, route: str, rate: float, burst: int, run_script: ScriptRunner) -> None:
        self.route = route
        self.rate = rate
        self.burst = burst
        self.run_script = run_script

    async def wait(self, key: str) -> float:
        """Take one request from ``key``'s bucket: 0.0 if it fits, else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        reply = await self.run_script(
            RATE_TAKE, [keys.auth_rate_key(self.route, key)], [self.rate, self.burst]
        )
        return float(reply)
