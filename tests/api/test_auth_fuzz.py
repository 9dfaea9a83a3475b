"""Schemathesis fuzzes the authenticated API from its OpenAPI document: no answer is a 5xx.

Requests carry an admin key (every route reachable) or a producer key limited to
another model (the refusal paths); hypothesis draws a bounded number of
examples per operation so the test takes seconds. ``GET /queries`` is left
out: it is an endless server-sent-event stream unless ``timeout`` or ``limit``
is given (the matrix and the quickstart tests cover it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from service.api.app import create_app
from tests.api.auth_fixtures import auth_settings, bearer, make_key, own_server

# One xdist worker runs the whole module: its module fixtures (a server, the app, schemathesis's
# strategies: 3-10 s) are built once, not once on each worker.
pytestmark = pytest.mark.xdist_group("auth-fuzz")

EXAMPLES = 30


@pytest.fixture(scope="module")
def fuzz_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("auth-fuzz")
    for server in own_server(tmp / "redis"):
        app = create_app(auth_settings(server.url, tmp, max_batch_items=20))
        yield {
            "app": app,
            "admin": make_key(server.url, "admin", "fuzz-admin"),
            "producer": make_key(server.url, "producer", "fuzz-producer", ["elsewhere"]),
        }


@schemathesis.serializer("application/zip")
def _as_file(ctx: Any, value: Any) -> bytes:
    """``POST /models/import`` takes a file: the drawn value's bytes (not a valid export,
    so the import must answer 422, never a 5xx)."""
    return value if isinstance(value, bytes) else str(value).encode()


@pytest.fixture(scope="module")
def operations(fuzz_world: dict[str, Any]) -> list[Any]:
    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzz_world["app"])
    return [r.ok() for r in schema.exclude(path="/queries").get_all_operations()]


def _no_5xx(case: Any, response: Any) -> None:
    """No 5xx, but for the one documented here: /health/models is 503 while no worker runs
    (for the default model, and for any model a fuzzed ``PUT /models`` created)."""
    if case.path == "/health/models" and response.status_code == 503:
        assert "default" in response.json()["unhealthy"]
        return
    assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.text}"


def _fuzz(operation: Any, check: Callable[[Any], None]) -> None:
    """Run ``check`` on ``EXAMPLES`` generated cases of ``operation`` (hypothesis shrinks failures)."""

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def run(case: Any) -> None:
        check(case)

    run()


@pytest.mark.slow
def test_fuzzed_admin_requests_never_get_a_5xx(
    fuzz_world: dict[str, Any], operations: list[Any]
) -> None:
    assert len(operations) >= 15

    def check(case: Any) -> None:
        response = case.call(headers=bearer(fuzz_world["admin"]))
        _no_5xx(case, response)

    for operation in operations:
        _fuzz(operation, check)


def test_fuzzed_requests_of_a_key_for_another_model_are_refused_without_a_5xx(
    fuzz_world: dict[str, Any], operations: list[Any]
) -> None:
    public = ("/health/live", "/health/ready", "/metrics")
    answered = ("/predict", "/events", "/", "/models", "/health/models")  # own model, lists

    def check(case: Any) -> None:
        response = case.call(headers=bearer(fuzz_world["producer"]))
        _no_5xx(case, response)
        if case.path not in public + answered:  # every other route needs another role
            assert response.status_code in (403, 404, 405, 422), response.text

    for operation in operations:
        _fuzz(operation, check)
