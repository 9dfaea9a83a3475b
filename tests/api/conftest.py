"""Fixtures of the API tests: the real ASGI app on the session's real Redis server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.settings import Settings


@pytest.fixture
def api_settings(settings: Settings) -> Settings:
    """Settings of the app under test: a 3-feature default cmtl model, small limits."""
    return settings.model_copy(
        update={
            "default_model": "default",
            "default_learner": "cmtl",
            "default_n_features": 3,
            "max_body_bytes": 64 * 1024,
            "max_batch_items": 50,
        }
    )


@pytest.fixture
def client(api_settings: Settings, rb: redis.Redis) -> Iterator[TestClient]:
    """A client of the app, started (lifespan) on a flushed database."""
    with TestClient(create_app(api_settings)) as c:
        yield c


def log_length(r: redis.Redis, model: str = "default") -> int:
    """Number of entries in a model's log."""
    return int(r.xlen(f"omtl:{{{model}}}:log"))
