"""``GET /queries?answers=true``: an accepted label reaches every open subscriber, of
every API replica, as ``event: label_answered`` (docs/architecture.md, "Answered requests")."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import redis

from service.settings import Settings
from service.store import keys
from tests.api.test_core_queries import LiveApi, _until


class EventSubscriber:
    """An SSE client that keeps every message with its event name and id."""

    def __init__(self, port: int, query: str) -> None:
        self.port, self.query = port, query
        self.messages: list[tuple[str, str | None, dict[str, Any]]] = []
        self.opened = False

    async def run(self) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(f"GET /queries?{self.query} HTTP/1.0\r\nHost: test\r\n\r\n".encode())
        await writer.drain()
        assert b" 200 " in await reader.readline()
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        fields: dict[str, str] = {}
        try:
            while line := await reader.readline():
                text = line.decode().rstrip("\n")
                if text.startswith(":"):
                    self.opened = True
                elif not text:
                    if "data" in fields:
                        body = orjson.loads(fields["data"])
                        self.messages.append((fields.get("event", ""), fields.get("id"), body))
                    fields = {}
                else:
                    name, _, value = text.partition(": ")
                    fields[name] = value
        finally:
            writer.close()

    def of(self, event: str) -> list[dict[str, Any]]:
        return [body for name, _, body in self.messages if name == event]


async def _post(port: int, path: str, body: Any) -> tuple[int, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = orjson.dumps(body)
    head = f"POST {path} HTTP/1.0\r\nHost: test\r\nContent-Length: {len(data)}\r\n"
    writer.write(head.encode() + b"content-type: application/json\r\n\r\n" + data)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    payload = await reader.read()
    writer.close()
    return status, orjson.loads(payload) if payload else None


def test_an_accepted_label_reaches_every_subscriber_of_every_replica(
    settings: Settings, rb: redis.Redis
) -> None:
    short = settings.model_copy(
        update={"default_n_features": 2, "queries_keepalive_s": 0.5, "queries_block_s": 1.0}
    )

    async def scenario(first: int, second: int) -> None:
        watchers = [EventSubscriber(p, "answers=true") for p in (first, first, second)]
        plain = EventSubscriber(first, "")
        subs = [*watchers, plain]
        tasks = [asyncio.create_task(s.run()) for s in subs]
        assert await _until(lambda: all(s.opened for s in subs), 30)
        events = []
        for i in range(3):
            status, body = await _post(first, "/predict", {"task": "a", "x": [1.0, float(i)]})
            assert status == 200
            events.append(body["event_id"])
        # a request the worker would emit, so that the plain subscriber gets something
        await asyncio.to_thread(
            rb.xadd, keys.queries_key("default"), {"event": events[2], "task": "a"}
        )
        # two labels: one through each replica
        assert (await _post(first, "/label", {"event_id": events[0], "y": 1}))[0] == 202
        assert (await _post(second, "/label", {"event_id": events[1], "y": -1}))[0] == 202
        # a repeated label is not accepted, so it is not announced again
        status, body = await _post(first, "/label", {"event_id": events[0], "y": 1})
        assert status == 202 and body["status"] == "duplicate"
        want = [
            {"model": "default", "event_id": events[0]},
            {"model": "default", "event_id": events[1]},
        ]
        assert await _until(lambda: all(w.of("label_answered") == want for w in watchers), 30)
        assert await _until(lambda: all(len(s.of("label_request")) == 1 for s in subs), 30)
        await asyncio.sleep(1.5)  # past a blocking read and a keep-alive: nothing more comes
        assert all(w.of("label_answered") == want for w in watchers)
        assert plain.of("label_answered") == []
        # answers carry no id: Last-Event-ID stays a position in the label requests
        assert all(i is None for s in watchers for e, i, _ in s.messages if e == "label_answered")
        assert int(rb.xlen(keys.answers_key("default"))) == 2
        for t in tasks:
            t.cancel()

    with LiveApi(short) as one, LiveApi(short) as two:
        asyncio.run(scenario(one.port, two.port))
