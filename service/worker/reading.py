"""The worker's I/O per read: one XREAD over every owned log, one flush of its writes.

:func:`read_logs` reads every owned log, the server's time and each model's
configuration generation in one round trip; :func:`flush` writes what applying
a read produced (label requests, dead letters, outlier alerts) in one pipeline.
:func:`send_read` and :func:`take_read` split the same read in two, so that it can
be sent on a connection of its own before the previous read is applied (the
worker's read-ahead, docs/architecture.md, "The worker state machine").
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from service.store import Store, keys
from service.store.cluster import REDIRECTED, is_cluster_client
from service.store.scripts import REQUEST_FIELDS, WRITE_REQUESTS
from service.worker.outliers import outlier_alerts
from service.worker.owned import Owned

__all__ = [
    "ALERTS_MAXLEN",
    "DEAD_MAXLEN",
    "REQUESTS_PER_CALL",
    "flush",
    "queue_requests",
    "read_logs",
    "send_read",
    "take_read",
]

#: Pause after an empty read on a cluster (its reads cannot block on many slots at once).
CLUSTER_IDLE_S = 0.05
DEAD_MAXLEN = 100_000
ALERTS_MAXLEN = 10_000
#: Label requests written by one script call (:data:`~service.store.scripts.WRITE_REQUESTS`):
#: a few milliseconds of the server's time at most.
REQUESTS_PER_CALL = 1000


def read_logs(
    r: Store, by_log: Mapping[bytes, Owned], count: int, block_ms: int | None
) -> tuple[dict[bytes, list[Any]], int, list[Any]]:
    """One XREAD over every owned log, then the server's time (ms) and each model's
    config generation (in ``by_log`` order), all in one round trip."""
    if is_cluster_client(r):
        return _read_logs_cluster(r, by_log, count, block_ms)
    streams = list(by_log)
    ids = [o.state.read_id for o in by_log.values()]
    args: list[Any] = ["XREAD", "COUNT", count]
    if block_ms is not None:
        args += ["BLOCK", block_ms]
    args += ["STREAMS", *streams, *ids]
    with r.pipeline(transaction=False) as p:
        p.execute_command(*args)
        p.time()
        for owned in by_log.values():
            p.hget(keys.config_key(owned.state.name), "generation")
        reply, (seconds, micros), *generations = p.execute()
    now_ms = int(seconds) * 1000 + int(micros) // 1000
    if not reply:
        return {}, now_ms, generations
    pairs = reply.items() if isinstance(reply, dict) else reply  # RESP3 / RESP2
    return {bytes(stream): entries for stream, entries in pairs}, now_ms, generations


def send_read(conn: Any, by_log: Mapping[bytes, Owned], ids: Sequence[str], count: int) -> int:
    """Send :func:`read_logs`'s commands (without BLOCK, reading each log after its id in
    ``ids``) on the connection ``conn`` of a plain client, without waiting for the replies;
    returns how many replies :func:`take_read` is to take."""
    commands: list[tuple[Any, ...]] = [("XREAD", "COUNT", count, "STREAMS", *by_log, *ids)]
    commands.append(("TIME",))
    commands += [("HGET", keys.config_key(o.state.name), "generation") for o in by_log.values()]
    conn.send_packed_command(conn.pack_commands(commands))
    return len(commands)


def take_read(conn: Any, n: int) -> tuple[dict[bytes, list[Any]], int, list[Any]]:
    """The ``n`` replies of :func:`send_read` on ``conn``, as :func:`read_logs` returns
    them. Any failure leaves the connection closed (no reply is left unread on it)."""
    try:
        reply, (seconds, micros), *generations = [conn.read_response() for _ in range(n)]
    except BaseException:
        conn.disconnect()
        raise
    now_ms = int(seconds) * 1000 + int(micros) // 1000
    if not reply:
        return {}, now_ms, generations
    pairs = reply.items() if isinstance(reply, dict) else reply  # RESP3 / RESP2
    return {bytes(stream): entries for stream, entries in pairs}, now_ms, generations


def _read_logs_cluster(
    r: Store, by_log: Mapping[bytes, Owned], count: int, block_ms: int | None
) -> tuple[dict[bytes, list[Any]], int, list[Any]]:
    """:func:`read_logs` on a Redis Cluster: one non-blocking XREAD per log (each model's
    keys have a slot of their own) in one plain pipeline per node (a tenth of the client
    CPU of redis-py's cluster pipeline); an empty read pauses up to
    :data:`CLUSTER_IDLE_S` instead of blocking (docs/scaling.md, "Redis Cluster").
    A redirection (slots moving) reloads the slot map and reads through the cluster
    pipeline, which follows it."""
    seconds, micros = r.time()
    now_ms = int(seconds) * 1000 + int(micros) // 1000
    try:
        replies = _per_node(r, by_log, count)
    except REDIRECTED:
        r.nodes_manager.initialize()  # type: ignore[attr-defined]
        with r.pipeline(transaction=False) as p:
            for stream, owned in by_log.items():
                p.execute_command("XREAD", "COUNT", count, "STREAMS", stream, owned.state.read_id)
            for owned in by_log.values():
                p.hget(keys.config_key(owned.state.name), "generation")
            replies = p.execute()
    n = len(by_log)
    got: dict[bytes, list[Any]] = {}
    for reply in replies[:n]:
        pairs = reply.items() if isinstance(reply, dict) else (reply or [])
        for stream, entries in pairs:
            if entries:  # the fields may come parsed into a dict: flatten back
                got[bytes(stream)] = [[eid, _flat(fields)] for eid, fields in entries]
    if not got and block_ms:
        time.sleep(min(block_ms / 1000, CLUSTER_IDLE_S))
    return got, now_ms, replies[n:]


def _per_node(r: Store, by_log: Mapping[bytes, Owned], count: int) -> list[Any]:
    """Each log's XREAD reply, then each model's generation (``by_log`` order), read with
    one plain pipeline per node holding some of the logs."""
    streams = list(by_log)
    groups: dict[str, list[int]] = {}
    clients: dict[str, Store] = {}
    for i, stream in enumerate(streams):
        node = r.get_node_from_key(stream)  # type: ignore[attr-defined]
        groups.setdefault(node.name, []).append(i)
        clients[node.name] = node.redis_connection
    out: list[Any] = [None] * (2 * len(streams))
    owned = list(by_log.values())
    for name, members in groups.items():
        with clients[name].pipeline(transaction=False) as p:
            for i in members:
                p.execute_command(
                    "XREAD", "COUNT", count, "STREAMS", streams[i], owned[i].state.read_id
                )
            for i in members:
                p.hget(keys.config_key(owned[i].state.name), "generation")
            found = p.execute()
        for j, i in enumerate(members):
            out[i] = found[j]
            out[len(streams) + i] = found[len(members) + j]
    return out


def _flat(fields: Any) -> list[Any]:
    """A field list as XREAD sends it (``[k1, v1, k2, v2, ...]``)."""
    if not isinstance(fields, dict):
        return list(fields or [])
    return [item for pair in fields.items() for item in pair]


def queue_requests(pipe: Any, key: str, requests: Sequence[Mapping[str, str]], maxlen: int) -> None:
    """Queue label requests (the worker's six fields each) onto the stream ``key`` in
    ``pipe``: :data:`~service.store.scripts.WRITE_REQUESTS` calls of up to
    :data:`REQUESTS_PER_CALL`, in order."""
    for start in range(0, len(requests), REQUESTS_PER_CALL):
        args: list[Any] = [maxlen]
        for fields in requests[start : start + REQUESTS_PER_CALL]:
            args += [fields[f] for f in REQUEST_FIELDS]
        WRITE_REQUESTS.queue(pipe, [key], args)


def flush(r: Store, owned: Owned, queries_maxlen: int) -> None:
    """Write the model's label requests, dead letters and outlier alerts in one pipeline,
    with its progress (how many of the log's entries are applied: the API's backlog
    bound, :data:`service.store.scripts.APPEND_EVENTS`)."""
    st = owned.state
    alerts = outlier_alerts(st)
    name = st.name
    with r.pipeline(transaction=False) as p:
        p.hset(
            keys.progress_key(name),
            mapping={"applied": owned.applied_in_log(), "generation": st.generation},
        )
        queue_requests(p, keys.queries_key(name), owned.outbox.requests, queries_maxlen)
        for fields in owned.outbox.dead:
            p.xadd(keys.dead_key(name), fields, maxlen=DEAD_MAXLEN, approximate=True)  # type: ignore[arg-type]
        for fields in alerts:
            p.xadd(keys.alerts_key(name), fields, maxlen=ALERTS_MAXLEN, approximate=True)  # type: ignore[arg-type]
        p.execute()
    owned.outbox.clear()
