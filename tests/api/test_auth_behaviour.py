"""Authentication beyond the matrix: revocation across replicas, the audit trail, rate limits,
modes, the bootstrap key and the OpenAPI security scheme (README "Authentication and roles")."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.auth import Role
from service.auth.mode import AuthNotConfigured
from service.auth.store import get_key, revoke_key
from service.auth.tokens import new_token, token_id
from service.auth.verifier import KeyVerifier
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings
from service.store import connect_async, keys
from service.store.codec import Label, decode_entry
from tests.api.auth_fixtures import auth_settings, bearer, flushed, make_key, own_server
from tests.service.helpers import wait_until

EVENT = {"task": "a", "x": [1, 0, 0]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    yield from own_server(tmp_path_factory.mktemp("auth-behaviour"))


@pytest.fixture
def r(server: EmbeddedRedis) -> Iterator[redis.Redis]:
    yield from flushed(server.url)


def _app(server: EmbeddedRedis, tmp: Path, **update: object) -> TestClient:
    return TestClient(create_app(auth_settings(server.url, tmp, **update)))


def test_a_revoked_key_is_refused_by_every_replica_within_the_check_interval(
    server: EmbeddedRedis, r: redis.Redis, tmp_path: Path
) -> None:
    admin = make_key(server.url, "admin", "root")
    producer = make_key(server.url, "producer", "feeder")
    with _app(server, tmp_path) as a, _app(server, tmp_path) as b:
        for replica in (a, b):  # both have the key cached now
            assert replica.post("/predict", json=EVENT, headers=bearer(producer)).status_code == 200
        assert a.delete("/keys/feeder", headers=bearer(admin)).status_code == 204
        revoked_at = time.monotonic()
        assert a.post("/predict", json=EVENT, headers=bearer(producer)).status_code in (200, 401)
        # every replica refuses the key once OMTL_AUTH_REVOCATION_CHECK_S (1 s) has passed
        refused = lambda: all(  # noqa: E731
            replica.post("/predict", json=EVENT, headers=bearer(producer)).status_code == 401
            for replica in (a, b)
        )
        wait_until(refused, max(0.0, 1.05 - (time.monotonic() - revoked_at)), interval=0.05)
        for replica in (a, b):
            answer = replica.post("/predict", json=EVENT, headers=bearer(producer))
            assert answer.status_code == 401
            assert answer.json() == {"detail": "invalid or revoked API key"}


def test_verifier_caches_keys_and_drops_them_when_the_counter_moves(
    server: EmbeddedRedis, r: redis.Redis
) -> None:
    token = make_key(server.url, "viewer", "watcher")
    now = [100.0]

    async def run() -> list[object]:
        client = connect_async(server.url)
        verifier = KeyVerifier(client, cache_s=30.0, check_every_s=1.0, clock=lambda: now[0])
        seen: list[object] = [await verifier.verify(token)]
        await revoke_key(client, "watcher")  # e.g. by another process
        now[0] += 0.5
        seen.append(await verifier.verify(token))  # cached, counter not read yet
        now[0] += 0.5
        seen.append(await verifier.verify(token))  # counter read: refused
        seen.append(await verifier.verify(token + "x"))
        await client.aclose()
        return seen

    first, cached, after, malformed = asyncio.run(run())
    assert getattr(first, "name", None) == "watcher" and getattr(first, "role", None) is Role.VIEWER
    assert cached == first
    assert after is None and malformed is None


def test_labels_record_the_key_name_and_ignore_a_client_annotator(
    server: EmbeddedRedis, r: redis.Redis, tmp_path: Path
) -> None:
    producer = make_key(server.url, "producer", "feeder")
    annotator = make_key(server.url, "annotator", "alice")
    with _app(server, tmp_path) as client:
        ids = [
            client.post("/predict", json=EVENT, headers=bearer(producer)).json()["event_id"]
            for _ in range(2)
        ]
        for event_id, sent in zip(ids, ["mallory", None], strict=True):
            body = {"event_id": event_id, "y": 1, "annotator": sent}
            assert client.post("/label", json=body, headers=bearer(annotator)).status_code == 202
    labels = [
        e
        for e in (decode_entry(i, f) for i, f in r.xrange(keys.log_key("default")))
        if isinstance(e, Label)
    ]
    assert [(lb.event, lb.annotator) for lb in labels] == [(ids[0], "alice"), (ids[1], "alice")]


def test_model_changes_and_key_changes_are_in_the_audit_trail(
    server: EmbeddedRedis, r: redis.Redis, tmp_path: Path
) -> None:
    admin = make_key(server.url, "admin", "ops-anna")
    model = {"learner": "cmtl", "n_features": 4}
    with _app(server, tmp_path) as client:
        h = bearer(admin)
        assert client.put("/models/spam", json=model, headers=h).status_code == 201
        assert (
            client.put("/models/spam", json={**model, "n_features": 5}, headers=h).status_code
            == 200
        )
        assert client.delete("/models/spam", headers=h).status_code == 204
        created = client.post("/keys", json={"role": "producer", "name": "feeder"}, headers=h)
        assert created.status_code == 201 and created.json()["key"].startswith("omtl_")
        assert client.delete("/keys/feeder", headers=h).status_code == 204
        # refused requests are not in it
        viewer = make_key(server.url, "viewer", "peek")
        assert client.delete("/models/default", headers=bearer(viewer)).status_code == 403
        trail = client.get("/audit", headers=h).json()
    assert [(e["actor"], e["action"], e["target"]) for e in trail] == [
        ("ops-anna", "model.create", "spam"),
        ("ops-anna", "model.reconfigure", "spam"),
        ("ops-anna", "model.delete", "spam"),
        ("ops-anna", "key.create", "feeder"),
        ("ops-anna", "key.revoke", "feeder"),
    ]
    assert trail[0]["details"]["learner"] == "cmtl"
    assert r.xlen(keys.audit_key()) == 5


def test_keys_are_stored_as_hashes_only(
    server: EmbeddedRedis, r: redis.Redis, tmp_path: Path
) -> None:
    admin = make_key(server.url, "admin", "root")
    with _app(server, tmp_path) as client:
        created = client.post(
            "/keys", json={"role": "viewer", "models": ["m"]}, headers=bearer(admin)
        )
        listed = client.get("/keys", headers=bearer(admin)).json()
    token = created.json()["key"]
    dump = b"".join(v for v in r.hvals(keys.auth_keys_key()))
    assert token.encode() not in dump and admin.encode() not in dump
    record = orjson.loads(r.hget(keys.auth_keys_key(), token_id(token)))
    assert set(record) == {"id", "name", "role", "models", "created", "hash"}
    assert all("key" not in k and "hash" not in k for k in listed)
    assert {k["name"]: k["models"] for k in listed} == {
        "root": None,
        f"key-{token_id(token)}": ["m"],
    }


def test_key_creation_refuses_bad_input_and_taken_names(
    server: EmbeddedRedis, r: redis.Redis, tmp_path: Path
) -> None:
    admin = bearer(make_key(server.url, "admin", "root"))
    restricted = bearer(make_key(server.url, "admin", "local-admin", ["m"]))
    with _app(server, tmp_path) as client:
        assert client.post("/keys", json={"role": "root"}, headers=admin).status_code == 422
        no_models = {"role": "viewer", "models": []}  # not "every model"
        assert client.post("/keys", json=no_models, headers=admin).status_code == 422
        assert (
            client.post("/keys", json={"role": "viewer", "name": "a b"}, headers=admin).status_code
            == 422
        )
        taken = client.post("/keys", json={"role": "viewer", "name": "root"}, headers=admin)
        assert taken.status_code == 422 and "exists" in taken.json()["detail"]
        assert client.delete("/keys/nobody", headers=admin).status_code == 404
        refused = client.get("/keys", headers=restricted)
        assert refused.status_code == 403 and "cannot manage keys" in refused.json()["detail"]
    assert r.hlen(keys.auth_keys_key()) == 2


def test_rate_limits_per_key_answer_429_with_retry_after(
    server: EmbeddedRedis, r: redis.Redis, tmp_path: Path
) -> None:
    one = bearer(make_key(server.url, "producer", "one"))
    two = bearer(make_key(server.url, "producer", "two"))
    body = {"events": [{"task": "a", "x": [1, 0, 0], "y": 1}]}
    with _app(server, tmp_path, events_rate_per_key=0.5, rate_burst=2) as client:
        answers = [client.post("/events", json=body, headers=one) for _ in range(3)]
        assert [a.status_code for a in answers] == [202, 202, 429]
        assert answers[2].headers["retry-after"] == "2"
        assert "over its rate limit for /events" in answers[2].json()["detail"]
        assert client.post("/events", json=body, headers=two).status_code == 202  # its own bucket
    assert r.xlen(keys.log_key("default")) == 3  # the refused request wrote nothing


def test_label_rate_limit(server: EmbeddedRedis, r: redis.Redis, tmp_path: Path) -> None:
    producer = bearer(make_key(server.url, "producer", "p"))
    annotator = bearer(make_key(server.url, "annotator", "a"))
    with _app(server, tmp_path, label_rate_per_key=1.0, rate_burst=1) as client:
        ids = [
            client.post("/predict", json=EVENT, headers=producer).json()["event_id"]
            for _ in range(2)
        ]
        assert (
            client.post("/label", json={"event_id": ids[0], "y": 1}, headers=annotator).status_code
            == 202
        )
        refused = client.post("/label", json={"event_id": ids[1], "y": 1}, headers=annotator)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert not r.hexists(keys.labels_key("default"), ids[1])


def test_a_non_loopback_bind_needs_an_explicit_mode(server: EmbeddedRedis, tmp_path: Path) -> None:
    with pytest.raises(AuthNotConfigured, match="OMTL_AUTH=required"):
        create_app(Settings(redis_url=server.url, api_host="0.0.0.0"))
    create_app(Settings(redis_url=server.url, api_host="0.0.0.0", auth="off"))
    create_app(Settings(redis_url=server.url, api_host="::1"))


def test_auth_off_serves_everyone_as_anonymous(
    server: EmbeddedRedis, r: redis.Redis, tmp_path: Path
) -> None:
    with _app(server, tmp_path, auth="off") as client:
        event_id = client.post("/predict", json=EVENT).json()["event_id"]
        body = {"event_id": event_id, "y": 1, "annotator": "me"}
        assert client.post("/label", json=body).status_code == 202
        assert client.delete("/models/default").status_code == 204
    labels = [decode_entry(i, f) for i, f in r.xrange(keys.log_key("default"))]
    assert not labels  # deleted with the model
    trail = [f[b"actor"] for _, f in r.xrange(keys.audit_key())]
    assert trail == [b"anonymous"]


def test_bootstrap_admin_key_from_a_file_is_registered_once_and_stays_revoked(
    server: EmbeddedRedis, r: redis.Redis, tmp_path: Path
) -> None:
    token = new_token()
    secret = tmp_path / "admin.key"
    secret.write_text(token + "\n")
    with _app(server, tmp_path, bootstrap_admin_key_file=secret) as client:
        assert client.get("/keys", headers=bearer(token)).json()[0]["name"] == "bootstrap-admin"
        assert client.delete("/keys/bootstrap-admin", headers=bearer(token)).status_code == 204
    with _app(server, tmp_path, bootstrap_admin_key_file=secret) as client:  # a restart
        assert client.get("/keys", headers=bearer(token)).status_code == 401
    record = asyncio.run(_get(server.url, token_id(token) or ""))
    assert record is None


async def _get(url: str, key_id: str) -> object:
    client = connect_async(url)
    try:
        return await get_key(client, key_id)
    finally:
        await client.aclose()


def test_a_bootstrap_file_without_a_key_stops_the_start(
    server: EmbeddedRedis, tmp_path: Path
) -> None:
    secret = tmp_path / "admin.key"
    secret.write_text("REPLACE_ME\n")
    app = _app(server, tmp_path, bootstrap_admin_key_file=secret)
    with pytest.raises(AuthNotConfigured, match="does not hold an omtl key"), app:
        pass


def test_openapi_declares_the_bearer_scheme_and_each_route_role(
    server: EmbeddedRedis, tmp_path: Path
) -> None:
    doc = create_app(auth_settings(server.url, tmp_path)).openapi()
    assert doc["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": doc["components"]["securitySchemes"]["apiKey"]["description"],
    }
    roles = {}
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            if path in ("/health/live", "/health/ready", "/metrics"):
                assert "security" not in op
                continue
            assert op["security"] == [{"apiKey": []}]
            assert op["description"].startswith("**Role:** ")
            assert {"401", "403"} <= set(op["responses"])
            roles[method.upper(), path] = op["x-omtl-role"]
    assert roles["POST", "/predict"] == "producer"
    assert roles["POST", "/label"] == "annotator"
    assert roles["DELETE", "/models/{model}"] == "admin"
    assert roles["GET", "/models"] == "viewer"
    assert "429" in doc["paths"]["/label"]["post"]["responses"]
    assert "429" in doc["paths"]["/events"]["post"]["responses"]


def test_metrics_are_open_by_default_and_can_need_a_key_or_move_to_their_own_port(
    server: EmbeddedRedis, r: redis.Redis, tmp_path: Path
) -> None:
    import urllib.request

    from service.embedded_redis import free_port

    viewer = bearer(make_key(server.url, "viewer", "grafana"))
    with _app(server, tmp_path) as client:
        assert client.get("/metrics").status_code == 200
    port = free_port()
    with _app(server, tmp_path, metrics_public=False, metrics_port=port) as client:
        assert client.get("/metrics").status_code == 401
        documented = client.get("/openapi.json").json()["paths"]["/metrics"]["get"]
        assert documented["security"] == [{"apiKey": []}]
        assert documented["x-omtl-role"] == "viewer"
        answer = client.get("/metrics", headers=viewer)
        assert answer.status_code == 200 and "omtl_http_requests" in answer.text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as own:
            assert own.status == 200 and b"omtl_http_requests" in own.read()
    with pytest.raises(OSError):  # stopped with the app
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_omtl_api_and_up_refuse_a_public_bind_without_auth_and_say_the_mode(
    server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from service.cli import main as omtl
    from service.cli.up_cmd import _auth_line, _banner
    from service.settings import get_settings

    monkeypatch.setenv("REDIS_URL", server.url)
    monkeypatch.delenv("OMTL_AUTH", raising=False)
    get_settings.cache_clear()
    try:
        for command in ("api", "up"):
            assert omtl([command, "--host", "0.0.0.0", "--port", "1"]) == 2
            assert "OMTL_AUTH=required" in capsys.readouterr().err
    finally:
        get_settings.cache_clear()
    loopback = Settings(redis_url=server.url)
    line = _auth_line(loopback)
    assert line is not None and "off (loopback only" in line
    required = _auth_line(Settings(redis_url=server.url, api_host="0.0.0.0", auth="required"))
    assert required is not None and "required" in required
    banner = _banner(loopback, "redis://omtl:s3cret@redis:6379/0", False, line)
    assert "s3cret" not in banner and "redis://omtl:***@redis:6379/0" in banner
    assert line in banner


@pytest.mark.parametrize(("scope", "third"), [("process", 202), ("redis", 429)])
def test_rate_limits_across_two_replicas(
    server: EmbeddedRedis, r: redis.Redis, tmp_path: Path, scope: str, third: int
) -> None:
    """Per process, each replica has its own bucket; in Redis, the replicas share one."""
    key = bearer(make_key(server.url, "producer", "feeder"))
    body = {"events": [{"task": "a", "x": [1, 0, 0], "y": 1}]}
    limits = {"events_rate_per_key": 0.2, "rate_burst": 2, "rate_limit_scope": scope}
    with _app(server, tmp_path, **limits) as a, _app(server, tmp_path, **limits) as b:
        statuses = [c.post("/events", json=body, headers=key) for c in (a, b, a)]
    assert [s.status_code for s in statuses[:2]] == [202, 202]
    assert statuses[2].status_code == third
    if third == 429:
        assert statuses[2].headers["retry-after"] == "5"  # (1 - tokens) / 0.2, rounded up
        assert r.xlen(keys.log_key("default")) == 2
        assert 0 < r.ttl(keys.auth_rate_key("events", token_id_of(key))) <= 11


def token_id_of(headers: dict[str, str]) -> str:
    return token_id(headers["Authorization"].removeprefix("Bearer ")) or ""
