"""Every route x every role x every kind of key: 401 / 403 / 2xx as documented, nothing
written on a refusal (README "Authentication and roles").

Kinds of credentials: the role's key for every model (``valid``), no key, a
wrong key (the id of a live key with another secret), a revoked key, and the
role's key limited to another model (``other``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.auth.tokens import token_id
from service.settings import Settings
from service.store import keys
from service.store.models import ModelConfig, delete_model, get_model, put_model
from service.store.snapshot import read_version
from service.worker import Worker
from tests.api.auth_fixtures import (
    auth_settings,
    bearer,
    fingerprint,
    make_key,
    own_server,
    revoke,
)

# One xdist worker runs the whole module: its module fixture (a server, sixteen keys, a worker
# run) is built once, not once on each worker.
pytestmark = pytest.mark.xdist_group("auth-matrix")

ROLES = ("admin", "producer", "annotator", "viewer")
CREDENTIALS = ("valid", "none", "wrong", "revoked", "other")
TARGET, OTHER, IMPORTED = "m1", "m2", "m3"


@dataclass(frozen=True)
class Route:
    """One route of the API: what a request looks like and who may send it."""

    method: str
    path: str
    role: str  # the role it needs (admin may do everything; any role may do "viewer")
    body: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    listing: bool = False  # lists models: another model's key gets 200 without TARGET
    keys_admin: bool = False  # needs an admin key for every model

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"


ROUTES = [
    Route("POST", "/predict", "producer", {"model": TARGET, "task": "a", "x": [1, 0, 0]}),
    Route(
        "POST",
        "/predict",
        "producer",
        {"model": TARGET, "items": [{"task": "a", "x": [1, 0, 0]}]},
        params={"form": "batch"},
    ),
    Route(
        "POST",
        "/events",
        "producer",
        {"model": TARGET, "events": [{"task": "a", "x": [0, 1, 0], "y": 1}]},
    ),
    Route("POST", "/label", "annotator", {"model": TARGET, "event_id": "<event>", "y": 1}),
    Route(
        "GET", "/queries", "annotator", params={"model": TARGET, "after": "0-0", "timeout": 0.05}
    ),
    Route("GET", "/models", "viewer", listing=True),
    Route("PUT", f"/models/{TARGET}", "admin", {"learner": "cmtl", "n_features": 3}),
    Route("GET", f"/models/{TARGET}", "viewer"),
    Route("DELETE", f"/models/{TARGET}", "admin"),
    Route("GET", f"/models/{TARGET}/tasks", "viewer"),
    Route("GET", f"/models/{TARGET}/relations", "viewer"),
    Route("GET", f"/models/{TARGET}/export", "viewer"),
    Route("GET", f"/models/{TARGET}/snapshots", "viewer"),
    Route("POST", f"/models/{TARGET}/rollback", "admin", {"version": "<newest>"}),
    # the body is TARGET's export; admin keys of another model must name one of theirs (as=)
    Route("POST", "/models/import", "admin", "<export>", params={"as": IMPORTED}),
    Route("GET", f"/models/{TARGET}/history", "viewer"),
    Route("GET", f"/models/{TARGET}/queries/pending", "annotator"),
    Route("GET", f"/dashboard/data/{TARGET}", "viewer"),
    Route("GET", "/", "viewer", listing=True),
    Route("GET", "/health/models", "viewer", listing=True),
    Route("POST", "/keys", "admin", {"role": "viewer"}, keys_admin=True),
    Route("GET", "/keys", "admin", keys_admin=True),
    Route("DELETE", "/keys/disposable", "admin", keys_admin=True),
    Route("GET", "/audit", "admin", keys_admin=True),
]
PUBLIC = ["/health/live", "/health/ready", "/metrics", "/openapi.json", "/docs", "/redoc"]
#: Served without a key, outside the OpenAPI document: the pages and their assets.
PAGES = ["/dashboard", "/annotate", "/static/pages/pages.css", "/static/pages/annotate.js"]


def expected(route: Route, role: str, credential: str) -> int | None:
    """The documented status: 401, 403, or None for "2xx"."""
    if credential in ("none", "wrong", "revoked"):
        return 401
    if not (role == "admin" or route.role in (role, "viewer")):
        return 403
    if credential == "other":
        return None if route.listing else 403
    return None


@dataclass
class World:
    """The module's app, its Redis and every key."""

    client: TestClient
    app: FastAPI
    r: redis.Redis
    url: str
    keys: dict[tuple[str, str], str]
    settings: Settings
    event: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("auth-matrix")
    for server in own_server(tmp / "redis"):
        settings = auth_settings(server.url, tmp)
        credentials: dict[tuple[str, str], str] = {}
        for role in ROLES:
            credentials[role, "valid"] = make_key(server.url, role, f"{role}-all")
            credentials[role, "other"] = make_key(server.url, role, f"{role}-m2", [OTHER])
            revoked = make_key(server.url, role, f"{role}-revoked")
            revoke(server.url, f"{role}-revoked")
            credentials[role, "revoked"] = revoked
            live_id = token_id(credentials[role, "valid"])
            credentials[role, "wrong"] = f"omtl_{live_id}_{'A' * 43}"
        r = redis.Redis.from_url(server.url)
        app = create_app(settings)
        with TestClient(app) as client:
            yield World(client, app, r, server.url, credentials, settings)
        r.close()


@pytest.fixture
def ready(world: World) -> World:
    """TARGET and OTHER exist with a live worker heartbeat; TARGET has a snapshot (to roll
    back to) and an event to label; IMPORTED does not exist; the key ``disposable`` exists."""
    for name in (TARGET, OTHER):
        if get_model(world.r, name) is None:
            put_model(world.r, name, ModelConfig(learner="cmtl", n_features=3))
            world.event.pop(name, None)
    if read_version(world.r, TARGET) is None:
        # the worker snapshots a model once it applied an entry: a model just created (by
        # this fixture, after a test deleted it) has none yet
        _post_event(world)
        Worker(world.settings, models=[TARGET]).run(until_idle=True, timeout=30)
        assert read_version(world.r, TARGET) is not None
    if get_model(world.r, IMPORTED) is not None:
        delete_model(world.r, IMPORTED)
    for name in (TARGET, OTHER, "default"):  # "live" workers (none runs here)
        world.r.set(keys.heartbeat_key(name), "1")
    if TARGET not in world.event:
        world.event[TARGET] = _post_event(world)
    if not world.r.hexists(keys.auth_names_key(), "disposable"):
        make_key(world.url, "viewer", "disposable")
    return world


def _post_event(world: World) -> str:
    """The id of a new unlabelled event of TARGET (a ``/predict``)."""
    answer = world.client.post(
        "/predict",
        json={"model": TARGET, "task": "a", "x": [1, 0, 0]},
        headers=bearer(world.keys["admin", "valid"]),
    )
    assert answer.status_code == 200
    return str(answer.json()["event_id"])


def _send(world: World, route: Route, headers: dict[str, str]) -> Any:
    body = route.body
    params = {k: v for k, v in route.params.items() if k != "form"}
    admin = bearer(world.keys["admin", "valid"])
    if body == "<export>":
        exported = world.client.get(f"/models/{TARGET}/export", headers=admin)
        assert exported.status_code == 200
        return world.client.request(
            route.method, route.path, content=exported.content, params=params, headers=headers
        )
    if isinstance(body, dict) and body.get("event_id") == "<event>":
        body = {**body, "event_id": world.event[TARGET]}
    if isinstance(body, dict) and body.get("version") == "<newest>":
        kept = world.client.get(f"/models/{TARGET}/snapshots", headers=admin).json()["versions"]
        body = {**body, "version": kept[0]}
        world.event.pop(TARGET, None)  # a rollback discards the events after the snapshot
    return world.client.request(route.method, route.path, json=body, params=params, headers=headers)


@pytest.mark.parametrize("credential", CREDENTIALS)
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.id}{r.params.get('form', '')}")
def test_route_role_credential(ready: World, route: Route, role: str, credential: str) -> None:
    headers = {} if credential == "none" else bearer(ready.keys[role, credential])
    before = fingerprint(ready.r)
    answer = _send(ready, route, headers)
    want = expected(route, role, credential)
    if want is None:
        assert 200 <= answer.status_code < 300, answer.text
        if route.listing:
            text = answer.text
            assert (f'"{TARGET}"' in text) == (credential == "valid"), text
            assert f'"{OTHER}"' in text
        return
    assert answer.status_code == want, answer.text
    assert answer.json()["detail"]
    if want == 401:
        assert answer.headers["www-authenticate"] == "Bearer"
    assert fingerprint(ready.r) == before  # nothing written on a refusal


def test_every_route_of_the_app_is_in_the_matrix(world: World) -> None:
    """A new route must be added here, with the role it needs (and so cannot go unchecked)."""
    served = {
        (method.upper(), path)
        for path, operations in world.app.openapi()["paths"].items()
        for method in operations
    }
    documented = {(r.method, r.path.replace(TARGET, "{model}")) for r in ROUTES}
    documented = {(m, "/keys/{key}" if p == "/keys/disposable" else p) for m, p in documented}
    public = {("GET", p) for p in PUBLIC} | {("GET", "/docs/oauth2-redirect")}
    assert served - public == documented


@pytest.mark.parametrize("path", PUBLIC + PAGES)
def test_public_paths_need_no_key(world: World, path: str) -> None:
    assert world.client.get(path).status_code == 200


def test_unknown_paths_need_a_key_too(world: World) -> None:
    assert world.client.get("/nowhere").status_code == 401
    admin = bearer(world.keys["admin", "valid"])
    assert world.client.get("/nowhere", headers=admin).status_code == 404


@pytest.mark.parametrize(
    "header",
    ["Basic dXNlcjpwYXNz", "Bearer", "Bearer not-a-key", "bearer omtl_000000000000_" + "x" * 43],
)
def test_malformed_authorization_headers_are_401(world: World, header: str) -> None:
    answer = world.client.post(
        "/predict",
        json={"model": TARGET, "task": "a", "x": [1, 0, 0]},
        headers={"Authorization": header},
    )
    assert answer.status_code == 401
    assert answer.json()["detail"] in (
        "missing API key: send Authorization: Bearer <key>",
        "invalid or revoked API key",
    )


def test_a_key_for_its_own_model_may_use_it(ready: World, tmp_path: Path) -> None:
    key = make_key(ready.url, "producer", "producer-m1", [TARGET])
    body = {"model": TARGET, "task": "a", "x": [1, 0, 0]}
    assert ready.client.post("/predict", json=body, headers=bearer(key)).status_code == 200
    refused = ready.client.post("/predict", json={**body, "model": OTHER}, headers=bearer(key))
    assert refused.status_code == 403
    assert refused.json()["detail"] == "the key 'producer-m1' is not allowed to use the model 'm2'"
    # omitted "model" means the default model, which this key may not use either
    del body["model"]
    assert ready.client.post("/predict", json=body, headers=bearer(key)).status_code == 403
