"""GET /queries at production scale: idle longer than every timeout, more subscribers
than the API's Redis pool, all through one shared reader per model (a real
uvicorn server on a real socket, a real Redis server)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import orjson
import pytest
import redis
import uvicorn

from service.api.app import create_app
from service.settings import Settings
from service.store import keys


class LiveApi:
    """The app served by uvicorn on a free port, in a thread of this process."""

    def __init__(self, settings: Settings, port: int = 0) -> None:
        config = uvicorn.Config(
            create_app(settings),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=1,  # open streams are cut, as an orchestrator's kill does
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveApi:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the API did not start"
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)


class Subscriber:
    """One SSE client over a raw HTTP/1.0 connection (the body ends when the server closes)."""

    def __init__(self, port: int, query: str) -> None:
        self.port = port
        self.query = query
        self.messages: list[dict[str, Any]] = []
        self.comments = 0
        self.closed = False

    async def run(self) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(f"GET /queries?{self.query} HTTP/1.0\r\nHost: test\r\n\r\n".encode())
        await writer.drain()
        status = await reader.readline()
        assert b" 200 " in status, status
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        data: dict[str, str] = {}
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                text = line.decode().rstrip("\n")
                if text.startswith(":"):
                    self.comments += 1
                elif not text:
                    if "data" in data:
                        self.messages.append(orjson.loads(data["data"]))
                    data = {}
                else:
                    name, _, value = text.partition(": ")
                    data[name] = value
        finally:
            self.closed = True
            writer.close()


def _clients_of(r: redis.Redis) -> int:
    return int(r.info("clients")["connected_clients"])


def _add_requests(r: redis.Redis, n: int, model: str = "default") -> list[str]:
    return [
        r.xadd(
            keys.queries_key(model), {"event": f"{i + 1}-0", "task": "a", "ref": str(i)}
        ).decode()
        for i in range(n)
    ]


async def _until(condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.05)
    return bool(condition())


async def _http_status(port: int, method: str, path: str, body: bytes = b"") -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = f"{method} {path} HTTP/1.0\r\nHost: test\r\nContent-Length: {len(body)}\r\n"
    writer.write(head.encode() + b"content-type: application/json\r\n\r\n" + body)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    await reader.read()
    writer.close()
    return status


@pytest.fixture
def short_timeouts(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"default_n_features": 3, "queries_keepalive_s": 0.5, "queries_block_s": 1.0}
    )


def test_idle_subscribers_outlive_the_client_default_timeout(
    settings: Settings, rb: redis.Redis
) -> None:
    """With the shipped timeouts (20 s blocking read, 15 s keep-alive), subscribers idle for
    7 s, longer than redis-py's 5 s default socket timeout that used to cut the read, still
    receive the next request; the stream is still open afterwards."""
    real = settings.model_copy(update={"default_n_features": 3})
    assert real.queries_block_s > 5 and real.queries_keepalive_s > 5

    async def scenario(port: int) -> list[Subscriber]:
        subs = [Subscriber(port, "timeout=60") for _ in range(3)]
        tasks = [asyncio.create_task(s.run()) for s in subs]
        assert await _until(lambda: all(s.comments >= 1 for s in subs), 60)  # all connected
        await asyncio.sleep(7.0)
        assert not any(s.closed for s in subs)
        ids = await asyncio.to_thread(_add_requests, rb, 1)
        assert await _until(lambda: all(len(s.messages) == 1 for s in subs), 10)
        assert all(s.messages[0]["id"] == ids[0] for s in subs)
        assert not any(s.closed for s in subs)
        for t in tasks:
            t.cancel()
        return subs

    with LiveApi(real) as api:
        asyncio.run(scenario(api.port))


def test_many_idle_subscribers_share_one_reader(short_timeouts: Settings, rb: redis.Redis) -> None:
    """150 subscribers (more than the API's 100-connection pool) idle for 3 s, six times the
    keep-alive and three times the blocking read: other endpoints keep answering, the API
    holds one reader connection for all of them, and a burst reaches every subscriber."""
    n_subs, burst = 150, 40

    async def scenario(port: int, before: int) -> None:
        subs = [Subscriber(port, "") for _ in range(n_subs)]
        tasks = [asyncio.create_task(s.run()) for s in subs]
        assert await _until(lambda: all(s.comments >= 1 for s in subs), 60)  # all connected
        await asyncio.sleep(3.0)
        assert not any(s.closed for s in subs)
        assert all(s.comments >= 3 for s in subs)  # the first line and keep-alives
        used = await asyncio.to_thread(_clients_of, rb)
        assert used - before <= 3, (before, used)  # the reader, the pool's first, the fast path
        # the pool is free: every other endpoint answers
        statuses = await asyncio.gather(
            *(_http_status(port, "GET", "/models/default") for _ in range(20)),
            *(
                _http_status(port, "POST", "/predict", b'{"task": "a", "x": [1, 0, 0]}')
                for _ in range(20)
            ),
        )
        assert statuses == [200] * 40
        ids = await asyncio.to_thread(_add_requests, rb, burst)
        assert await _until(lambda: all(len(s.messages) == burst for s in subs), 30)
        assert all([m["id"] for m in s.messages] == ids for s in subs)
        for t in tasks:
            t.cancel()

    with LiveApi(short_timeouts) as api:
        asyncio.run(scenario(api.port, _clients_of(rb)))


def test_resume_far_back_catches_up_then_follows(short_timeouts: Settings, rb: redis.Redis) -> None:
    """A subscriber resuming before what the shared reader buffers reads the gap from Redis,
    then follows the live stream, with no request missed or repeated."""
    old = _add_requests(rb, 2500)

    async def scenario(port: int) -> None:
        live = Subscriber(port, "")
        live_task = asyncio.create_task(live.run())
        assert await _until(lambda: live.comments >= 1, 60)
        late = Subscriber(port, f"after={old[10]}&limit=2500")
        late_task = asyncio.create_task(late.run())
        await asyncio.sleep(0.3)
        new = await asyncio.to_thread(_add_requests, rb, 11)
        await asyncio.wait_for(late_task, 30)
        assert [m["id"] for m in late.messages] == old[11:] + new
        assert await _until(lambda: len(live.messages) == 11, 10)
        assert [m["id"] for m in live.messages] == new
        live_task.cancel()

    with LiveApi(short_timeouts) as api:
        asyncio.run(scenario(api.port))
