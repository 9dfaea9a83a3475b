"""Helpers of the authentication tests: a server of their own, keys, a state fingerprint.

The authentication tests keep one app and its keys for a whole module, so they
run on a server of their own (a throwaway embedded one, like the session's):
other modules' tests flush the session server between any two of their tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis

from service.auth.store import create_key, revoke_key
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings
from service.store import connect_async


def own_server(tmp: Path, **options: Any) -> Iterator[EmbeddedRedis]:
    """A started embedded server in ``tmp`` (generator for a fixture)."""
    with EmbeddedRedis(tmp, **options) as server:
        yield server


def auth_settings(url: str, tmp: Path, **update: Any) -> Settings:
    """Settings of an app that requires keys: a 3-feature default cmtl model, short intervals."""
    base = {
        "redis_url": url,
        "data_dir": tmp,
        "auth": "required",
        "default_model": "default",
        "default_learner": "cmtl",
        "default_n_features": 3,
        "snapshot_every_seconds": 0.2,
        "lease_ttl_ms": 1000,
        "block_ms": 50,
        "worker_metrics_port": 0,
        "max_batch_items": 50,
    }
    return Settings(**(base | update))


def make_key(url: str, role: str, name: str, models: list[str] | None = None) -> str:
    """Create a key in the Redis at ``url``; returns the key."""

    async def run() -> str:
        client = connect_async(url)
        try:
            token, _ = await create_key(client, role, name, models)
            return token
        finally:
            await client.aclose()

    return asyncio.run(run())


def revoke(url: str, key: str) -> None:
    """Revoke the key with this id or name."""

    async def run() -> None:
        client = connect_async(url)
        try:
            await revoke_key(client, key)
        finally:
            await client.aclose()

    asyncio.run(run())


def bearer(key: str) -> dict[str, str]:
    """The header carrying ``key``."""
    return {"Authorization": f"Bearer {key}"}


def fingerprint(r: redis.Redis) -> dict[bytes, bytes | None]:
    """Every key's serialized value: equal fingerprints mean nothing was written."""
    return {k: r.dump(k) for k in sorted(r.keys("*"))}


def flushed(url: str) -> Iterator[redis.Redis]:
    """A bytes client on the flushed database at ``url`` (generator for a fixture)."""
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield client
    client.close()
