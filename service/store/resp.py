"""A minimal pipelining Redis connection for the hot write path of the API.

``/predict`` spends most of its time in the Redis client, not in Redis: a
``redis.asyncio`` script call costs several times the CPU of writing the
encoded command to a socket and parsing the reply with hiredis. This class
does only that: one TCP connection; the commands issued during one
event-loop iteration (concurrent requests) leave in one write, pipelined;
replies are matched to callers in order by a FIFO of futures and parsed by
``hiredis.Reader``.

It serves ``redis://`` URLs (with optional password and database); for other
URLs (TLS, unix sockets) the API uses ``redis.asyncio`` instead.

Timeouts: connecting gives up after ``timeout`` seconds, and a watchdog aborts
the connection when replies are awaited but none has arrived for ``timeout``
seconds (a stopped or half-open server). Every caller waiting on it then gets
a ``ConnectionError`` (the API's 503), and the next command opens a new
connection.
"""

from __future__ import annotations

import asyncio
import collections
import time
import urllib.parse
from collections.abc import Iterable
from typing import Any, cast

import hiredis

__all__ = ["RespConnection", "RespError", "pack", "pack_args"]


class RespError(Exception):
    """An error reply from the server."""


def _bytes(part: Any) -> bytes:
    if isinstance(part, str):
        return part.encode()
    if isinstance(part, int | float):
        return repr(part).encode()
    raise TypeError(f"cannot send {type(part).__name__} to Redis")


def _encode(part: Any) -> bytes:
    cls = part.__class__
    if cls is bytes:
        return part
    if cls is str:
        return part.encode()
    return _bytes(part)


def pack_args(parts: Iterable[Any]) -> bytes:
    """The RESP bulk strings of ``parts``, without the array header."""
    return b"".join([b"$%d\r\n%b\r\n" % (len(d), d) for d in map(_encode, parts)])


def pack(*parts: Any) -> bytes:
    """One command in the RESP protocol."""
    return b"*%d\r\n" % len(parts) + pack_args(parts)


class _Protocol(asyncio.Protocol):
    def __init__(self, timeout: float | None = None) -> None:
        self.reader = hiredis.Reader(notEnoughData=Ellipsis)
        self.waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self.transport: asyncio.WriteTransport | None = None
        self.lost: BaseException | None = None
        self.outgoing: list[bytes] = []
        self.timeout = timeout
        #: monotonic time of the last reply, or of the first wait after none was pending
        self.progress = 0.0
        self.watchdog: asyncio.TimerHandle | None = None

    def expect(self, future: asyncio.Future[Any]) -> None:
        """Register the reply future of a command about to be sent (FIFO order)."""
        if not self.waiting:
            self.progress = time.monotonic()
            if self.timeout is not None and self.watchdog is None:
                self.watchdog = asyncio.get_running_loop().call_later(self.timeout, self._watch)
        self.waiting.append(future)

    def _watch(self) -> None:
        """Abort the connection when replies are due and none came for ``timeout`` s."""
        self.watchdog = None
        if not self.waiting or self.lost is not None or self.timeout is None:
            return
        idle = time.monotonic() - self.progress
        if idle >= self.timeout:
            self.lost = TimeoutError(f"Redis did not answer within {self.timeout:g} s")
            self._fail_waiting()
            if self.transport is not None:
                self.transport.abort()
            return
        self.watchdog = asyncio.get_running_loop().call_later(self.timeout - idle, self._watch)

    def send(self, data: bytes) -> None:
        """Queue ``data``; everything queued in one loop iteration goes out in one write."""
        if not self.outgoing:
            asyncio.get_running_loop().call_soon(self.flush)
        self.outgoing.append(data)

    def flush(self) -> None:
        """Write the queued commands (a no-op when the queue was already written)."""
        if not self.outgoing:
            return
        data, self.outgoing = self.outgoing, []
        if self.transport is not None and self.lost is None:
            self.transport.write(b"".join(data))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement the interface without subclassing asyncio's.
        self.transport = cast(asyncio.WriteTransport, transport)

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        self.progress = time.monotonic()
        while (reply := self.reader.gets()) is not Ellipsis:
            future = self.waiting.popleft()
            if future.done():
                continue
            if isinstance(reply, hiredis.ReplyError):
                future.set_exception(RespError(str(reply)))
            else:
                future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.lost is None:
            self.lost = exc or ConnectionResetError("connection to Redis closed")
        self._fail_waiting()
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None

    def _fail_waiting(self) -> None:
        while self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_exception(ConnectionError(str(self.lost)))


class RespConnection:
    """One pipelined connection to the server at a ``redis://`` URL (opened on first use).

    ``timeout`` (seconds, None: wait forever) bounds connecting and the wait for
    replies (module docstring).
    """

    def __init__(self, url: str, timeout: float | None = None) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "redis":
            raise ValueError(f"RespConnection serves redis:// URLs only, not {parts.scheme}://")
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 6379
        self.username = urllib.parse.unquote(parts.username) if parts.username else None
        self.password = urllib.parse.unquote(parts.password) if parts.password else None
        path = parts.path.strip("/")
        self.db = int(path) if path else 0
        self.timeout = timeout
        self._protocol: _Protocol | None = None
        self._connecting: asyncio.Lock | None = None

    async def _connect(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        try:
            _, protocol = await asyncio.wait_for(
                loop.create_connection(lambda: _Protocol(self.timeout), self.host, self.port),
                self.timeout,
            )
        except TimeoutError:
            raise ConnectionError(
                f"cannot connect to Redis at {self.host}:{self.port} within {self.timeout:g} s"
            ) from None
        self._protocol = protocol
        if self.password is not None:
            auth = [self.username, self.password] if self.username else [self.password]
            await self.call("AUTH", *auth)
        if self.db:
            await self.call("SELECT", self.db)
        return protocol

    async def _ready(self) -> _Protocol:
        protocol = self._protocol
        if protocol is not None and protocol.lost is None:
            return protocol
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            protocol = self._protocol
            if protocol is None or protocol.lost is not None:
                protocol = await self._connect()
            return protocol

    def send(self, *parts: Any) -> asyncio.Future[Any] | None:
        """Queue one command if connected; its reply future, or None when not connected.

        Commands queued in one event-loop iteration leave in one write.
        """
        return self.send_packed(pack(*parts))

    def send_packed(self, command: bytes, now: bool = False) -> asyncio.Future[Any] | None:
        """:meth:`send` for an already packed command; ``now`` writes the queue at once."""
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            return None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        protocol.expect(future)
        if now:
            protocol.outgoing.append(command)
            protocol.flush()
        else:
            protocol.send(command)
        return future

    async def call(self, *parts: Any) -> Any:
        """Send one command and await its reply (error replies raise :class:`RespError`)."""
        future = self.send(*parts)
        if future is None:
            await self._ready()
            future = self.send(*parts)
            if future is None:
                raise ConnectionError("connection to Redis lost while connecting")
        return await future

    async def evalsha(self, sha: str, script: str, keys: list[str], args: list[Any]) -> Any:
        """Run a script by its SHA1, loading it first if the server does not have it."""
        try:
            return await self.call("EVALSHA", sha, len(keys), *keys, *args)
        except RespError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
        await self.call("SCRIPT", "LOAD", script)
        return await self.call("EVALSHA", sha, len(keys), *keys, *args)

    def close(self) -> None:
        """Close the connection (pending calls fail with ``ConnectionError``)."""
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()
        self._protocol = None
