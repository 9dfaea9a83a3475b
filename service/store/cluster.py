"""Redis Cluster: the ``redis+cluster://`` URL, clients for it, and the API's slot-routed fast path.

A cluster is selected by the URL alone (``REDIS_URL=redis+cluster://h1:6379,h2:6379``,
optionally ``user:password@`` before the first node): the worker and the
API's ``redis.asyncio`` calls use redis-py's cluster clients, and the API's
hot write path uses :class:`ClusterResp`: one pipelining
:class:`~service.store.resp.RespConnection` per primary, each command sent
to the node owning its key's slot (CRC16 of the ``{m}`` hash tag, the
``CLUSTER SLOTS`` map), following ``MOVED`` (the map is reloaded) and ``ASK``
(``ASKING`` first) redirections.

Every multi-key command and script of the service touches the keys of one
model, which share its ``{m}`` hash tag and so one slot; the global keys (the
model registry ``omtl:models``, the worker membership ``omtl:workers``) are only
used by single-key commands. See ``docs/scaling.md``, "Redis Cluster".
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Callable
from typing import Any, Protocol, cast

import redis
import redis.asyncio as aredis
import redis.asyncio.cluster as acluster
import redis.cluster as scluster

from service.store.resp import RespConnection, RespError, pack

__all__ = [
    "REDIRECTED",
    "FastConnection",
    "SCHEME",
    "ClusterResp",
    "ClusterUrl",
    "connect_cluster",
    "connect_cluster_async",
    "is_cluster_client",
    "is_cluster_url",
    "key_slot",
]

#: The errors of a command sent to a node that no longer (or not yet) serves its slot.
REDIRECTED: tuple[type[Exception], ...] = (
    redis.exceptions.MovedError,
    redis.exceptions.AskError,
    redis.exceptions.TryAgainError,
    redis.exceptions.ClusterDownError,
)
#: The URL scheme that selects a cluster.
SCHEME = "redis+cluster"
SLOTS = 16384
#: Redirections followed for one command before giving up.
MAX_REDIRECTS = 5


def is_cluster_url(url: str | None) -> bool:
    """Whether ``url`` names a Redis Cluster."""
    return bool(url) and str(url).startswith(f"{SCHEME}://")


def is_cluster_client(r: object) -> bool:
    """Whether ``r`` is a cluster client (its multi-key reads go one slot at a time)."""
    return isinstance(r, scluster.RedisCluster)


class ClusterUrl:
    """The parts of a ``redis+cluster://[user:password@]host:port[,host:port...][/]`` URL."""

    def __init__(self, url: str) -> None:
        if not is_cluster_url(url):
            raise ValueError(f"not a {SCHEME}:// URL: {url!r}")
        rest = url[len(SCHEME) + 3 :].split("/", 1)[0].split("?", 1)[0]
        self.username: str | None = None
        self.password: str | None = None
        if "@" in rest:
            auth, rest = rest.rsplit("@", 1)
            user, _, password = auth.partition(":")
            self.username = urllib.parse.unquote(user) or None
            self.password = urllib.parse.unquote(password) if password else None
        self.nodes: list[tuple[str, int]] = []
        for part in rest.split(","):
            host, _, port = part.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"{SCHEME}:// URL needs host:port nodes, got {part!r}")
            self.nodes.append((host.strip("[]"), int(port)))

    def node_url(self, host: str, port: int) -> str:
        """A ``redis://`` URL of one node with the cluster's credentials."""
        auth = ""
        if self.password is not None:
            user = urllib.parse.quote(self.username or "", safe="")
            auth = f"{user}:{urllib.parse.quote(self.password, safe='')}@"
        return f"redis://{auth}{host}:{port}/0"


def _client_options(url: str, socket_timeout: float, connect_timeout: float) -> dict[str, Any]:
    """The options both redis-py cluster clients take, from a ``redis+cluster://`` URL."""
    parts = ClusterUrl(url)
    return {
        "username": parts.username,
        "password": parts.password,
        "decode_responses": False,
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": connect_timeout,
    }


def connect_cluster(url: str, socket_timeout: float, connect_timeout: float) -> redis.Redis:
    """redis-py's synchronous cluster client (typed as the plain client it stands in for)."""
    nodes = [scluster.ClusterNode(h, p) for h, p in ClusterUrl(url).nodes]
    options = _client_options(url, socket_timeout, connect_timeout)
    return cast(redis.Redis, scluster.RedisCluster(startup_nodes=nodes, **options))


def connect_cluster_async(
    url: str, socket_timeout: float, connect_timeout: float, max_connections: int = 100
) -> aredis.Redis:
    """redis-py's asyncio cluster client (typed as the plain client it stands in for)."""
    nodes = [acluster.ClusterNode(h, p) for h, p in ClusterUrl(url).nodes]
    options = _client_options(url, socket_timeout, connect_timeout)
    client = acluster.RedisCluster(startup_nodes=nodes, max_connections=max_connections, **options)
    return cast(aredis.Redis, client)


# ---------------------------------------------------------------- slots
def _crc16_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
        table.append(crc & 0xFFFF)
    return table


_TABLE = _crc16_table()


def crc16(data: bytes) -> int:
    """CRC16-CCITT (XMODEM), the cluster's key hash."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _TABLE[((crc >> 8) ^ byte) & 0xFF]
    return crc


def key_slot(key: bytes | str) -> int:
    """The cluster slot of ``key``: CRC16 of its ``{...}`` hash tag (if non-empty), mod 16384."""
    data = key.encode() if isinstance(key, str) else key
    start = data.find(b"{")
    if start >= 0:
        end = data.find(b"}", start + 1)
        if end > start + 1:
            data = data[start + 1 : end]
    return crc16(data) % SLOTS


def first_key(command: bytes) -> bytes:
    """The first key of a packed command: argument 3 of EVAL/EVALSHA, else argument 1."""
    pos = command.index(b"\r\n") + 2
    parts: list[bytes] = []
    want = 1
    while len(parts) <= want:
        end = command.index(b"\r\n", pos)
        size = int(command[pos + 1 : end])
        parts.append(command[end + 2 : end + 2 + size])
        pos = end + 4 + size
        if len(parts) == 1 and parts[0].upper() in (b"EVAL", b"EVALSHA"):
            want = 3
    return parts[want]


def _redirect(error: BaseException) -> tuple[str, int, str, int] | None:
    """(kind, slot, host, port) of a MOVED/ASK error reply, else None."""
    if not isinstance(error, RespError):
        return None
    words = str(error).split()
    if len(words) != 3 or words[0] not in ("MOVED", "ASK"):
        return None
    host, _, port = words[2].rpartition(":")
    return words[0], int(words[1]), host, int(port)


# ---------------------------------------------------------------- the fast path
class FastConnection(Protocol):
    """What the API's hot path needs of a connection: a
    :class:`~service.store.resp.RespConnection` for one server, :class:`ClusterResp`
    for a cluster."""

    def send_packed(self, command: bytes, now: bool = False) -> asyncio.Future[Any] | None:
        """Queue a packed command; its reply future, or None when not connected."""

    async def call(self, *parts: Any) -> Any:
        """Send one command and await its reply."""

    async def evalsha(self, sha: str, script: str, keys: list[str], args: list[Any]) -> Any:
        """Run a script by its SHA1, loading it if needed."""

    def close(self) -> None:
        """Close the connection(s)."""


class ClusterResp:
    """:class:`~service.store.resp.RespConnection`'s interface over every primary of a cluster."""

    def __init__(self, url: str, timeout: float | None = None) -> None:
        self._url = ClusterUrl(url)
        self.timeout = timeout
        self._nodes: dict[tuple[str, int], RespConnection] = {}
        self._slots: list[tuple[str, int] | None] = [None] * SLOTS
        self._loaded = False
        self._loading: asyncio.Lock | None = None

    def _node(self, address: tuple[str, int]) -> RespConnection:
        conn = self._nodes.get(address)
        if conn is None:
            conn = RespConnection(self._url.node_url(*address), self.timeout)
            self._nodes[address] = conn
        return conn

    async def refresh(self) -> None:
        """Load the slot map (``CLUSTER SLOTS``) from the first node that answers."""
        if self._loading is None:
            self._loading = asyncio.Lock()
        async with self._loading:
            error: Exception | None = None
            for address in [*self._nodes, *self._url.nodes]:
                try:
                    ranges = await self._node(address).call("CLUSTER", "SLOTS")
                except (OSError, RespError) as exc:
                    error = exc
                    continue
                for first, last, primary, *_ in ranges:
                    host = primary[0].decode() if isinstance(primary[0], bytes) else primary[0]
                    target = (host or address[0], int(primary[1]))
                    for slot in range(int(first), int(last) + 1):
                        self._slots[slot] = target
                self._loaded = True
                return
            raise ConnectionError(f"no cluster node answered CLUSTER SLOTS: {error}")

    def _for_key(self, key: bytes | str) -> RespConnection | None:
        address = self._slots[key_slot(key)] if self._loaded else None
        return None if address is None else self._node(address)

    def send_packed(self, command: bytes, now: bool = False) -> asyncio.Future[Any] | None:
        """Queue ``command`` on the node of its key; None until that node is connected
        (the caller then takes the awaiting path, :meth:`evalsha`). Redirections are
        followed behind the returned future."""
        conn = self._for_key(first_key(command))
        inner = None if conn is None else conn.send_packed(command, now)
        if inner is None:
            return None
        outer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        inner.add_done_callback(self._settle(outer, command))
        return outer

    def _settle(
        self, outer: asyncio.Future[Any], command: bytes
    ) -> Callable[[asyncio.Future[Any]], None]:
        def done(inner: asyncio.Future[Any]) -> None:
            if outer.done():
                return
            error = inner.exception()
            if error is None:
                outer.set_result(inner.result())
            elif _redirect(error) is not None:
                task = asyncio.ensure_future(self._call_packed(command))
                task.add_done_callback(lambda t: _copy(t, outer))
            else:
                outer.set_exception(error)

        return done

    async def _call_packed(self, command: bytes) -> Any:
        """Send a packed command to its node and await the reply, following redirections."""
        key = first_key(command)
        asking: tuple[str, int] | None = None
        for _ in range(MAX_REDIRECTS):
            if not self._loaded:
                await self.refresh()
            if asking is not None:
                conn = self._node(asking)
                await conn.call("ASKING")
            else:
                found = self._for_key(key)
                if found is None:
                    await self.refresh()
                    found = self._for_key(key)
                    if found is None:
                        raise ConnectionError("cluster slot not served by any node")
                conn = found
            future = conn.send_packed(command, now=True)
            if future is None:
                await conn.call("PING")  # connects
                future = conn.send_packed(command, now=True)
                if future is None:
                    raise ConnectionError("connection to Redis lost while connecting")
            try:
                return await future
            except RespError as exc:
                moved = _redirect(exc)
                if moved is None:
                    raise
                kind, slot, host, port = moved
                if kind == "MOVED":
                    self._slots[slot] = (host, port)
                    asking = None
                else:
                    asking = (host, port)
        raise ConnectionError(f"too many cluster redirections for key {key!r}")

    async def call(self, *parts: Any) -> Any:
        """One command: keyless ones (PING) go to every known primary, the first reply returned."""
        if len(parts) == 1:
            if not self._loaded:
                await self.refresh()
            targets = sorted({a for a in self._slots if a is not None})
            replies = [await self._node(a).call(*parts) for a in targets]
            return replies[0]
        return await self._call_packed(pack(*parts))

    async def evalsha(self, sha: str, script: str, keys: list[str], args: list[Any]) -> Any:
        """Run a script by its SHA1 on the node of its keys, loading it there if needed."""
        try:
            return await self._call_packed(pack("EVALSHA", sha, len(keys), *keys, *args))
        except RespError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
        return await self._call_packed(pack("EVAL", script, len(keys), *keys, *args))

    def close(self) -> None:
        """Close every node's connection."""
        for conn in self._nodes.values():
            conn.close()
        self._nodes.clear()


def _copy(source: asyncio.Future[Any], target: asyncio.Future[Any]) -> None:
    if target.done():
        return
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(cast(BaseException, source.exception()))
    else:
        target.set_result(source.result())
