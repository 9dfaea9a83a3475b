"""One label-request reader per model per API process, fanned out to every subscriber.

Each ``GET /queries`` subscriber of a model waits on the same
:class:`QueryFanout`: a background task that holds one Redis connection of its
own (:func:`service.store.connect_async_reader`, whose socket timeout is longer
than its blocking read) and follows ``omtl:{m}:queries`` with ``XREAD BLOCK``,
and, in the same read, ``omtl:{m}:answers`` (the event ids ``POST /label``
accepted a label for; sent only to subscribers that ask for them).
What it reads goes into a bounded in-memory buffer of ready SSE frames and
wakes the subscribers; each subscriber keeps its own cursor (a stream id) into
that buffer. So N subscribers cost one Redis connection, not N, and an idle
subscriber costs no Redis call at all.

A subscriber whose cursor lies before what the buffer covers (a resume with
``Last-Event-ID`` or ``after`` far back) catches up with plain ``XRANGE`` pages
through the API's shared pool, then joins the buffer. The reader stops when its
last subscriber leaves (after its blocking read returns) and a new one starts
with the next subscriber. See ``docs/architecture.md``, "Label requests".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from bisect import bisect_right
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

from service.store import STORE_UNAVAILABLE, AsyncStore, connect_async_reader, keys
from service.store.codec import entry_id_tuple

__all__ = [
    "BUFFER",
    "answer_frame",
    "QueryFanout",
    "QueryFanouts",
    "catch_up",
    "frame_of",
    "id_text",
    "request_body",
]

log = logging.getLogger("omtl.api.queries")

#: Label requests kept in memory per model (older ones are read back from Redis).
BUFFER = 10_000
#: Entries per XREAD of the reader and per XRANGE page of a catching-up subscriber.
PAGE = 1000

EntryId = tuple[int, int]


def id_text(entry_id: EntryId) -> str:
    """``(ms, seq)`` -> ``"ms-seq"``."""
    return f"{entry_id[0]}-{entry_id[1]}"


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _number(v: Any) -> float | None:
    text = _text(v) if v is not None else ""
    try:
        return float(text) if text else None
    except ValueError:
        return None


def request_body(model: str, entry_id: str, fields: dict[Any, Any]) -> dict[str, Any]:
    """The JSON of one label request."""
    f = {_text(k): v for k, v in fields.items()}
    ts = _number(f.get("ts"))
    ref = f.get("ref")
    return {
        "id": entry_id,
        "model": model,
        "event_id": _text(f.get("event", b"")),
        "task": _text(f.get("task", b"")),
        "score": _number(f.get("score")),
        "p": _number(f.get("p")),
        "ref": _text(ref) if ref not in (None, b"") else None,
        "ts": None if ts is None else int(ts),
    }


def answer_frame(model: str, fields: dict[Any, Any]) -> bytes:
    """One SSE message ``event: label_answered`` (no ``id``: ``Last-Event-ID`` stays a
    position in the label requests)."""
    f = {_text(k): v for k, v in fields.items()}
    body = orjson.dumps({"model": model, "event_id": _text(f.get("event", b""))})
    return b"event: label_answered\ndata: " + body + b"\n\n"


def frame_of(model: str, entry_id: str, fields: dict[Any, Any]) -> bytes:
    """One SSE message: ``id``, ``event: label_request`` and the JSON body."""
    body = orjson.dumps(request_body(model, entry_id, fields))
    return b"id: " + entry_id.encode() + b"\nevent: label_request\ndata: " + body + b"\n\n"


class QueryFanout:
    """The shared reader of one model's label requests in this API process."""

    def __init__(self, url: str, model: str, block_s: float, on_stop: Callable[[], None]) -> None:
        self.model = model
        self.key = keys.queries_key(model)
        self.answers_key = keys.answers_key(model)
        self._url = url
        self._block_s = block_s
        self._on_stop = on_stop
        self.subscribers = 0
        #: ids and frames of the buffered requests, in stream order
        self._ids: list[EntryId] = []
        self._frames: list[bytes] = []
        #: every request with an id above this is in the buffer (once ``ready``)
        self.covered_from: EntryId = (0, 0)
        #: the reader's position: the newest id it has read
        self.last_id: EntryId = (0, 0)
        #: answered event ids (``answers`` stream ids and frames), bounded like the requests
        self._answer_ids: list[EntryId] = []
        self._answer_frames: list[bytes] = []
        self.answers_last: EntryId = (0, 0)
        self.ready = asyncio.Event()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the reader task."""
        self._task = asyncio.create_task(self._run(), name=f"omtl-queries-{self.model}")

    async def stop(self) -> None:
        """Stop the reader at once (application shutdown)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        client = connect_async_reader(self._url, self._block_s)
        try:
            await self._start_position(client)
            block_ms = max(1, int(self._block_s * 1000))
            while self.subscribers > 0:
                try:
                    reply: Any = await client.xread(
                        {
                            self.key: id_text(self.last_id),
                            self.answers_key: id_text(self.answers_last),
                        },
                        count=PAGE,
                        block=block_ms,
                    )
                except STORE_UNAVAILABLE as exc:
                    log.warning("label-request reader of %r: %s; retrying", self.model, exc)
                    await asyncio.sleep(0.5)
                    continue
                for stream, entries in reply or ():
                    if _text(stream) == self.answers_key:
                        self._add_answers(entries)
                    else:
                        self._add(entries)
        finally:
            # no await between the last subscriber check and leaving the registry
            self._on_stop()
            self.ready.set()
            self._wake()
            await client.aclose()

    async def _start_position(self, client: AsyncStore) -> None:
        while True:
            try:
                last = await client.xrevrange(self.key, count=1)
                answered = await client.xrevrange(self.answers_key, count=1)
                break
            except STORE_UNAVAILABLE as exc:
                log.warning("label-request reader of %r: %s; retrying", self.model, exc)
                await asyncio.sleep(0.5)
        if last:
            self.last_id = entry_id_tuple(_text(last[0][0]))
        if answered:
            self.answers_last = entry_id_tuple(_text(answered[0][0]))
        self.covered_from = self.last_id
        self.ready.set()

    def _add(self, entries: list[Any]) -> None:
        for raw_id, fields in entries:
            entry_id = _text(raw_id)
            self._ids.append(entry_id_tuple(entry_id))
            self._frames.append(frame_of(self.model, entry_id, fields))
        self.last_id = self._ids[-1]
        if len(self._ids) > 2 * BUFFER:
            cut = len(self._ids) - BUFFER
            self.covered_from = self._ids[cut - 1]
            del self._ids[:cut], self._frames[:cut]
        self._wake()

    def _add_answers(self, entries: list[Any]) -> None:
        for raw_id, fields in entries:
            self._answer_ids.append(entry_id_tuple(_text(raw_id)))
            self._answer_frames.append(answer_frame(self.model, fields))
        self.answers_last = self._answer_ids[-1]
        if len(self._answer_ids) > 2 * BUFFER:
            del self._answer_ids[:-BUFFER], self._answer_frames[:-BUFFER]
        self._wake()

    def answers_after(self, cursor: EntryId) -> tuple[list[bytes], EntryId]:
        """The buffered ``label_answered`` frames after ``cursor`` and the new cursor."""
        start = bisect_right(self._answer_ids, cursor)
        if start >= len(self._answer_ids):
            return [], cursor
        return self._answer_frames[start:], self._answer_ids[-1]

    def _wake(self) -> None:
        woken, self._wakeup = self._wakeup, asyncio.Event()
        woken.set()

    def after(self, cursor: EntryId, limit: int | None) -> tuple[list[bytes], EntryId]:
        """The buffered frames after ``cursor`` (at most ``limit``) and the new cursor."""
        start = bisect_right(self._ids, cursor)
        stop = len(self._ids) if limit is None else min(len(self._ids), start + limit)
        if start >= stop:
            return [], cursor
        return self._frames[start:stop], self._ids[stop - 1]

    async def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for new requests; False on a timeout."""
        try:
            await asyncio.wait_for(self._wakeup.wait(), seconds)
        except TimeoutError:
            return False
        return True

    @property
    def running(self) -> bool:
        """Whether the reader task is alive."""
        return self._task is not None and not self._task.done()


class QueryFanouts:
    """The running :class:`QueryFanout` of each model (one per model per process)."""

    def __init__(self, url: str, block_s: float) -> None:
        self._url = url
        self._block_s = block_s
        self._running: dict[str, QueryFanout] = {}

    def join(self, model: str) -> QueryFanout:
        """The model's reader with one more subscriber (started if none runs)."""
        fanout = self._running.get(model)
        if fanout is None or not fanout.running:
            fanout = QueryFanout(self._url, model, self._block_s, lambda: self._left(model))
            self._running[model] = fanout
            fanout.subscribers += 1
            fanout.start()
        else:
            fanout.subscribers += 1
        return fanout

    def _left(self, model: str) -> None:
        fanout = self._running.get(model)
        if fanout is not None and fanout.subscribers <= 0:
            del self._running[model]

    def readers(self) -> int:
        """How many readers (Redis connections) run now."""
        return sum(1 for f in self._running.values() if f.running)

    async def close(self) -> None:
        """Stop every reader."""
        for fanout in list(self._running.values()):
            await fanout.stop()
        self._running.clear()


async def catch_up(
    redis: AsyncStore, fanout: QueryFanout, cursor: EntryId, limit: int | None
) -> AsyncIterator[tuple[bytes, EntryId]]:
    """The requests between ``cursor`` and what ``fanout`` buffers, read from Redis."""
    while cursor < fanout.covered_from and (limit is None or limit > 0):
        count = PAGE if limit is None else min(PAGE, limit)
        upto = id_text(fanout.covered_from)
        page: Any = await redis.xrange(fanout.key, "(" + id_text(cursor), upto, count=count)
        for raw_id, fields in page:
            entry_id = _text(raw_id)
            cursor = entry_id_tuple(entry_id)
            yield frame_of(fanout.model, entry_id, fields), cursor
        if limit is not None:
            limit -= len(page)
        if len(page) < count:
            return
