"""The embedded server: binary, persistence across SIGKILL, directory lock, clean stop, a
port taken between choosing it and binding it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import service.embedded_cluster
import service.embedded_redis
from service.embedded_cluster import EmbeddedCluster
from service.embedded_redis import (
    DataDirLocked,
    EmbeddedRedis,
    PortInUse,
    find_server_binary,
    free_port,
)
from tests.service.helpers import wait_until


def test_the_wheel_binary_runs() -> None:
    out = subprocess.run([find_server_binary(), "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "server v=" in out.stdout


def _aof_bytes(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in data_dir.rglob("*.aof*") if p.is_file())


def test_data_survives_sigkill_and_restart_on_the_same_directory(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path).start()
    try:
        c = redis.Redis.from_url(server.url)
        ids = [c.xadd("omtl:{m}:log", {"k": "e", "n": str(i)}) for i in range(100)]
        c.set("marker-key", "kept")
        c.close()
        # the server appends to its AOF file right after each write (fsync follows within 1 s)
        assert wait_until(lambda: b"marker-key" in _aof_bytes(tmp_path), timeout=10)
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)
        assert server.proc is not None
        assert server.proc.wait(10) == -signal.SIGKILL
    finally:
        server.stop()
    with EmbeddedRedis(tmp_path) as again:
        c = redis.Redis.from_url(again.url)
        assert c.xlen("omtl:{m}:log") == 100
        assert [e[0] for e in c.xrange("omtl:{m}:log")] == ids
        assert c.get("marker-key") == b"kept"
        c.close()


def test_the_data_directory_is_locked_while_a_server_runs(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path), pytest.raises(DataDirLocked, match="in use"):
        EmbeddedRedis(tmp_path).start()
    # released on stop: the directory can be used again
    with EmbeddedRedis(tmp_path) as server:
        assert redis.Redis.from_url(server.url).ping()


def test_sigterm_stop_is_clean(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path).start()
    c = redis.Redis.from_url(server.url)
    c.set("k", "v")
    c.close()
    assert server.stop() == 0
    assert "bye bye" in server.log_path.read_text()


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another process listens on (a socket of this one)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def _free_port_taken_at(
    monkeypatch: pytest.MonkeyPatch, module: object, taken: int, at: int, calls: list[int]
) -> None:
    """``free_port`` in ``module`` answers ``taken`` at its call number ``at`` (as when
    another process binds the port it found free before the server does), free ports
    otherwise; ``calls`` collects the answers."""

    def racy_free_port(host: str = "127.0.0.1") -> int:
        calls.append(taken if len(calls) == at else free_port(host))
        return calls[-1]

    monkeypatch.setattr(module, "free_port", racy_free_port)


def test_a_chosen_port_taken_before_the_server_binds_it_is_replaced(
    tmp_path: Path, taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    _free_port_taken_at(monkeypatch, service.embedded_redis, taken_port, 0, calls)
    with EmbeddedRedis(tmp_path) as server:
        assert calls[0] == taken_port and len(calls) == 2
        assert server.port == calls[1] != taken_port
        assert redis.Redis.from_url(server.url).ping()
    assert "Address already in use" in server.log_path.read_text()


def test_a_given_port_that_is_taken_is_reported(tmp_path: Path, taken_port: int) -> None:
    with pytest.raises(PortInUse, match="Address already in use"):
        EmbeddedRedis(tmp_path, port=taken_port).start()
    # the directory is released: a server starts on it at once
    with EmbeddedRedis(tmp_path) as server:
        assert redis.Redis.from_url(server.url).ping()


def test_a_cluster_node_whose_bus_port_was_taken_starts_on_new_ports(
    tmp_path: Path, taken_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node 0's cluster bus port (the second port the cluster chooses) is taken: node 0 is
    started again on two new ports and the cluster forms."""
    calls: list[int] = []
    _free_port_taken_at(monkeypatch, service.embedded_cluster, taken_port, 1, calls)
    cluster = EmbeddedCluster(tmp_path)
    assert cluster.bus_ports[0] == taken_port
    with cluster:
        assert taken_port not in (cluster.nodes[0].port, cluster.bus_ports[0])
        assert len(calls) == 8  # two ports per node, two more for node 0
        for client in cluster.clients():
            with client:
                info = client.execute_command("CLUSTER", "INFO").decode()
                assert "cluster_state:ok" in info
                assert "cluster_known_nodes:3" in info
