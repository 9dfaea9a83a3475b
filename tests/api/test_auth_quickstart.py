"""The README quickstart (predict -> label request -> label -> new prediction), on loopback
without keys and with ``OMTL_AUTH=required`` and keys made by ``omtl keys create``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.cli import main as omtl
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings, get_settings
from service.worker import Worker
from tests.api.auth_fixtures import bearer, own_server

X = [1, 0, 0.5, 0, 0, 0, 0, 0, 0, 0]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    yield from own_server(tmp_path_factory.mktemp("auth-quickstart"))


@pytest.fixture
def url(server: EmbeddedRedis) -> str:
    with redis.Redis.from_url(server.url) as r:
        r.flushdb()
    return server.url


def _settings(url: str, tmp: Path, **update: object) -> Settings:
    """`make run`'s settings: the default adaptive-auto model with 10 features on 127.0.0.1."""
    return Settings(redis_url=url, data_dir=tmp, snapshot_every_seconds=0.2, block_ms=50, **update)


def _omtl_keys(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], url: str, *args: str
) -> str:
    monkeypatch.setenv("REDIS_URL", url)
    get_settings.cache_clear()
    try:
        assert omtl(["keys", *args]) == 0
    finally:
        get_settings.cache_clear()
    return capsys.readouterr().out.strip()


def _quickstart(
    client: TestClient, settings: Settings, producer: dict[str, str], annotator: dict[str, str]
) -> None:
    """The four steps of README "Try it", with the answers it shows."""
    first = client.post(
        "/predict", json={"task": "alice", "x": X, "ref": "msg-17"}, headers=producer
    )
    assert first.status_code == 200
    event_id = first.json()["event_id"]
    assert first.json()["score"] == 0.0

    Worker(settings, models=["default"]).run(until_idle=True, timeout=30)
    stream = client.get(
        "/queries", params={"model": "default", "after": "0-0", "limit": 1}, headers=annotator
    )
    (data,) = [
        orjson.loads(line[6:]) for line in stream.text.splitlines() if line.startswith("data: ")
    ]
    assert (data["event_id"], data["ref"]) == (event_id, "msg-17")

    body = {"event_id": event_id, "y": -1, "annotator": "me"}
    answer = client.post("/label", json=body, headers=annotator)
    assert answer.json() == {"status": "accepted", "event_id": event_id, "y": -1.0}
    Worker(settings, models=["default"]).run(until_idle=True, timeout=30)

    alice = client.post(
        "/predict", json={"task": "alice", "x": X, "learn": False}, headers=producer
    )
    assert (alice.json()["label"], alice.json()["score"]) == (-1.0, -1.538509507898451)
    bob = client.post("/predict", json={"task": "bob", "x": X, "learn": False}, headers=producer)
    assert bob.json()["score"] == pytest.approx(-1.025673005265634)


def test_quickstart_on_loopback_without_keys(url: str, tmp_path: Path) -> None:
    settings = _settings(url, tmp_path)
    assert settings.auth is None and settings.api_host == "127.0.0.1"
    with TestClient(create_app(settings)) as client:
        _quickstart(client, settings, {}, {})


def test_quickstart_with_auth_required_and_keys_from_omtl_keys_create(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    producer = _omtl_keys(monkeypatch, capsys, url, "create", "--role", "producer", "--name", "app")
    annotator = _omtl_keys(
        monkeypatch, capsys, url, "create", "--role", "annotator", "--name", "me"
    )
    settings = _settings(url, tmp_path, auth="required")
    with TestClient(create_app(settings)) as client:
        assert client.post("/predict", json={"task": "alice", "x": X}).status_code == 401
        _quickstart(client, settings, bearer(producer), bearer(annotator))
    listed = orjson.loads(_omtl_keys(monkeypatch, capsys, url, "list", "--json"))
    assert [(k["name"], k["role"]) for k in listed] == [("app", "producer"), ("me", "annotator")]
    assert _omtl_keys(monkeypatch, capsys, url, "revoke", "me").startswith("revoked ")
    with TestClient(create_app(settings)) as client:
        refused = client.get("/queries", params={"limit": 1}, headers=bearer(annotator))
        assert refused.status_code == 401


def test_omtl_keys_token_prints_a_fresh_key_that_is_not_stored(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    token = _omtl_keys(monkeypatch, capsys, url, "token")
    assert token.startswith("omtl_") and len(token) > 50
    with redis.Redis.from_url(url) as r:
        assert r.dbsize() == 0


def test_omtl_keys_refuses_bad_input(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REDIS_URL", url)
    get_settings.cache_clear()
    try:
        assert omtl(["keys", "create", "--role", "viewer", "--name", "x y"]) == 1
        assert "invalid key name" in capsys.readouterr().err
        assert omtl(["keys", "revoke", "nobody"]) == 1
        assert "no live key" in capsys.readouterr().err
    finally:
        get_settings.cache_clear()


def test_omtl_keys_finds_the_embedded_server_of_omtl_up(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "redis").mkdir()
    (tmp_path / "redis" / "url").write_text(url + "\n")  # as `omtl up` writes it
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("OMTL_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        assert omtl(["keys", "create", "--role", "viewer", "--name", "found"]) == 0
        monkeypatch.setenv("OMTL_DATA_DIR", str(tmp_path / "elsewhere"))
        get_settings.cache_clear()
        assert omtl(["keys", "list"]) == 2
    finally:
        get_settings.cache_clear()
    with redis.Redis.from_url(url) as r:
        assert r.hexists("omtl:auth:names", "found")


def test_the_cli_http_client_sends_omtl_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """`omtl replay` / `omtl annotate` talk through HttpApi: it sends OMTL_API_KEY."""
    import http.server
    import threading

    from service.cli.client import HttpApi

    seen: list[str | None] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(self.headers.get("Authorization"))
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b'{"ok": true}' if self.command == "POST" else b"data: {}\n\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        monkeypatch.setenv("OMTL_API_KEY", "omtl_0123456789ab_secret")
        api = HttpApi(base)
        assert api.request("POST", "/label", {"y": 1}) == (200, {"ok": True})
        lines = list(api.sse("/queries", {"limit": 1}))
        assert lines[0].startswith("data:")
        api.close()
        monkeypatch.delenv("OMTL_API_KEY")
        HttpApi(base).request("POST", "/label", {"y": 1})
    finally:
        server.shutdown()
    assert seen == ["Bearer omtl_0123456789ab_secret"] * 2 + [None]
