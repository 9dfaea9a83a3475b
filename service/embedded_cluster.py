"""A Redis Cluster of embedded servers: three primaries on free ports, for tests and benchmarks.

Each node is an :class:`~service.embedded_redis.EmbeddedRedis` started with
``cluster-enabled yes`` in a directory of its own. The 16384 slots are split in
three ranges (``CLUSTER ADDSLOTSRANGE``), the nodes are introduced to each other
(``CLUSTER MEET``), and :meth:`EmbeddedCluster.start` returns once every node
reports ``cluster_state:ok`` and knows the others (about a second). Its
:attr:`~EmbeddedCluster.url` is a ``redis+cluster://`` URL
(:mod:`service.store.cluster`). See ``docs/scaling.md``, "Redis Cluster".
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType

import redis

from service.embedded_redis import PORT_ATTEMPTS, EmbeddedRedis, PortInUse, free_port

__all__ = ["EmbeddedCluster"]

SLOTS = 16384


class EmbeddedCluster:
    """``n`` primaries (no replicas) sharing the slots evenly."""

    def __init__(self, data_dir: str | os.PathLike[str], n: int = 3) -> None:
        self.data_dir = Path(data_dir).resolve()
        #: each node's cluster bus port
        self.bus_ports = [0] * n
        self.nodes = [EmbeddedRedis(self.data_dir / f"node{i}") for i in range(n)]
        for i in range(n):
            self._new_ports(i)

    def _config_file(self, i: int) -> Path:
        return self.data_dir / f"node{i}" / "nodes.conf"

    def _new_ports(self, i: int) -> None:
        """Free ports for node ``i`` (its clients' and its cluster bus), in its options."""
        node = self.nodes[i]
        node.port, self.bus_ports[i] = free_port(), free_port()
        node.extra_args = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            str(self._config_file(i)),
            "--cluster-port",  # explicit: the default (port + 10000) may not exist
            str(self.bus_ports[i]),
            "--cluster-node-timeout",
            "5000",
        ]

    def _start_node(self, i: int) -> None:
        """Start node ``i``; a start that finds one of its ports taken in the meantime is
        tried again on new ones (:class:`~service.embedded_redis.PortInUse`), with a new
        cluster configuration."""
        for _ in range(PORT_ATTEMPTS - 1):
            try:
                self.nodes[i].start()
                return
            except PortInUse:
                self._config_file(i).unlink(missing_ok=True)
                self._new_ports(i)
        self.nodes[i].start()

    @property
    def url(self) -> str:
        """``redis+cluster://`` URL listing every node."""
        return "redis+cluster://" + ",".join(f"{n.host}:{n.port}" for n in self.nodes)

    def clients(self) -> list[redis.Redis]:
        """One plain client per node (for administration: flushing, INFO)."""
        return [redis.Redis(host=n.host, port=int(n.port or 0)) for n in self.nodes]

    def start(self, timeout: float = 20.0) -> EmbeddedCluster:
        """Start the nodes, assign the slots, join them and wait for ``cluster_state:ok``."""
        try:
            for i in range(len(self.nodes)):
                self._start_node(i)
        except BaseException:
            self.stop()
            raise
        clients = self.clients()
        try:
            n = len(self.nodes)
            for i, client in enumerate(clients):
                first, last = i * SLOTS // n, (i + 1) * SLOTS // n - 1
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
            for node, bus in zip(self.nodes[1:], self.bus_ports[1:], strict=True):
                clients[0].execute_command("CLUSTER", "MEET", node.host, node.port, bus)
            deadline = time.monotonic() + timeout
            while not all(self._ready(c) for c in clients):
                if time.monotonic() > deadline:
                    raise TimeoutError("the embedded cluster did not reach cluster_state:ok")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        finally:
            for client in clients:
                client.close()
        return self

    def _ready(self, client: redis.Redis) -> bool:
        info = client.execute_command("CLUSTER", "INFO")
        text = info.decode() if isinstance(info, bytes) else str(info)
        fields = dict(line.split(":", 1) for line in text.split() if ":" in line)
        return (
            fields.get("cluster_state") == "ok"
            and int(fields.get("cluster_known_nodes", 0)) == len(self.nodes)
            and int(fields.get("cluster_slots_ok", 0)) == SLOTS
        )

    def flush(self) -> None:
        """Empty every node."""
        for client in self.clients():
            with client:
                client.flushall()

    def stop(self) -> None:
        """Stop every node."""
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
