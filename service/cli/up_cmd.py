"""``omtl up``, ``omtl api`` and ``omtl worker``: run the service.

* ``omtl up`` runs everything on one machine: without ``REDIS_URL`` it starts
  the embedded server on ``<data dir>/redis`` (append-only persistence, a lock
  on the directory), creates the default model if it is missing, starts a
  worker in a child process and serves the API (uvicorn) in this process. The
  worker and the embedded server are supervised: either one that dies is
  started again (the server on the same port and data directory, so the API and
  the worker reconnect by themselves). Ctrl-C or SIGTERM stops the API, then the
  worker (which drains and snapshots), then the server (which fsyncs its
  append-only file). Before anything starts it checks that the API port and
  the worker's metrics port are free (and says which is taken); the embedded
  server's URL is printed and kept in ``<data dir>/redis/url`` for
  ``omtl redis-cli``.
* ``omtl api`` serves the API alone, ``omtl worker`` runs a worker alone; both
  need ``REDIS_URL`` (for compose and Kubernetes).
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from service.settings import Settings, get_settings

if TYPE_CHECKING:
    from service.embedded_redis import EmbeddedRedis

__all__ = ["COMMANDS", "register", "run_api", "run_up", "run_worker"]

log = logging.getLogger("omtl.up")
APP = "service.api.app:create_app"


#: The subcommands :func:`register` adds and their one-line help (read from this source by
#: :mod:`service.cli`, which imports only the module of the command run).
COMMANDS = {
    "up": "run the whole service: embedded Redis (unless REDIS_URL), API and worker",
    "api": "serve the HTTP API against REDIS_URL",
    "worker": "run a worker against REDIS_URL",
}


def register(sub: Any) -> None:
    """Add the ``up``, ``api`` and ``worker`` subcommands."""
    up = sub.add_parser("up", help=COMMANDS["up"])
    up.add_argument("--host", default=None, help="API bind address (default: OMTL_API_HOST)")
    up.add_argument("--port", type=int, default=None, help="API port (default: OMTL_API_PORT)")
    up.add_argument(
        "--data-dir", default=None, help="data directory of the embedded server (OMTL_DATA_DIR)"
    )
    up.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="the worker's Prometheus port (default: OMTL_WORKER_METRICS_PORT, 9101)",
    )
    up.set_defaults(func=run_up)

    api = sub.add_parser("api", help=COMMANDS["api"])
    api.add_argument("--host", default=None, help="bind address (default: OMTL_API_HOST)")
    api.add_argument("--port", type=int, default=None, help="port (default: OMTL_API_PORT)")
    api.set_defaults(func=run_api)

    worker = sub.add_parser("worker", help=COMMANDS["worker"])
    worker.add_argument("--model", action="append", help="serve only this model (repeatable)")
    worker.add_argument(
        "--metrics-port", type=int, default=None, help="Prometheus port (OMTL_WORKER_METRICS_PORT)"
    )
    worker.add_argument("--until-idle", action="store_true", help="exit once the logs are applied")
    worker.set_defaults(func=run_worker)


def _settings(args: argparse.Namespace) -> Settings:
    base = get_settings()
    update: dict[str, Any] = {}
    if getattr(args, "host", None):
        update["api_host"] = args.host
    if getattr(args, "port", None) is not None:
        update["api_port"] = args.port
    if getattr(args, "data_dir", None):
        update["data_dir"] = Path(args.data_dir)
    if getattr(args, "metrics_port", None) is not None:
        update["worker_metrics_port"] = args.metrics_port
    return base.model_copy(update=update)


def busy_ports(settings: Settings) -> list[str]:
    """What keeps ``omtl up`` from starting: each of its fixed ports already in use."""
    import socket

    wanted = [
        ("API", settings.api_host, settings.api_port, "--port"),
        ("worker metrics", settings.api_host, settings.worker_metrics_port, "--metrics-port"),
    ]
    busy = []
    for what, host, port, option in wanted:
        if port == 0:
            continue
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError as exc:
                busy.append(
                    f"the {what} port {port} on {host} is in use ({exc.strerror}); {option}"
                )
    return busy


def _logging(settings: Settings) -> None:
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )


#: Seconds uvicorn waits for open requests on shutdown. Label-request streams
#: (``GET /queries``) never end by themselves, so without a bound a stop would
#: wait for every annotator to disconnect; they reconnect with ``Last-Event-ID``.
SHUTDOWN_GRACE_S = 10


def _serve_api(settings: Settings) -> None:
    import uvicorn

    os.environ["REDIS_URL"] = str(settings.redis_url)
    os.environ["OMTL_API_HOST"] = settings.api_host
    os.environ["OMTL_API_PORT"] = str(settings.api_port)
    get_settings.cache_clear()
    uvicorn.run(
        APP,
        factory=True,
        host=settings.api_host,
        port=settings.api_port,
        log_level=settings.log_level,
        access_log=False,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )


def _auth_line(settings: Settings) -> str | None:
    """The banner's line on API keys; None (after printing why) when the API may not start
    with these settings (docs/architecture.md, "Authentication and roles")."""
    from service.auth.mode import AuthNotConfigured, auth_required

    try:
        required = auth_required(settings)
    except AuthNotConfigured as exc:
        print(f"omtl: {exc}", file=sys.stderr)
        return None
    if required:
        return "  auth            required: Authorization: Bearer <key> (omtl keys create)"
    if settings.auth is None:
        return "  auth            off (loopback only; OMTL_AUTH=required to require API keys)"
    return "  auth            OFF (OMTL_AUTH=off): anyone who reaches the API may use it"


def run_api(args: argparse.Namespace) -> int:
    """``omtl api``: serve the API against ``REDIS_URL``."""
    settings = _settings(args)
    _logging(settings)
    if _auth_line(settings) is None:
        return 2
    if not settings.redis_url:
        print("omtl api needs REDIS_URL (or use `omtl up`)", file=sys.stderr)
        return 2
    _serve_api(settings)
    return 0


def run_worker(args: argparse.Namespace) -> int:
    """``omtl worker``: run a worker against ``REDIS_URL``."""
    settings = _settings(args)
    if not settings.redis_url:
        print("omtl worker needs REDIS_URL (or use `omtl up`)", file=sys.stderr)
        return 2
    from service.store.models import ensure_default_model
    from service.worker.__main__ import main

    client = redis.Redis.from_url(settings.redis_url)
    try:
        ensure_default_model(client, settings)
    except ValueError as exc:
        print(f"omtl worker: cannot create the default model: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
    argv = [f"--model={m}" for m in args.model or []]
    if args.metrics_port is not None:
        argv.append(f"--metrics-port={args.metrics_port}")
    if args.until_idle:
        argv.append("--until-idle")
    return main(argv)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _start_worker(settings: Settings) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["REDIS_URL"] = str(settings.redis_url)
    env["OMTL_WORKER_METRICS_PORT"] = str(settings.worker_metrics_port)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return subprocess.Popen(
        [sys.executable, "-m", "service.worker"],
        env=env,
        preexec_fn=_die_with_parent,
        process_group=0,  # Ctrl-C reaches this process only; it stops the worker in order
    )


class _Supervisor:
    """Watches a child process every second and starts it again if it dies unexpectedly.

    ``poll`` returns the child's exit code (None while it runs), ``restart``
    starts it again, ``stop`` stops it for good (after the watching stopped).
    """

    def __init__(
        self,
        name: str,
        poll: Callable[[], int | None],
        restart: Callable[[], None],
        stop: Callable[[], object],
    ) -> None:
        self.name = name
        self._poll, self._restart, self._stop = poll, restart, stop
        self.restarts = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._watch, name=f"{name}-supervisor", daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.stopping.wait(1.0):
            code = self._poll()
            if code is None or self.stopping.is_set():
                continue
            log.warning("the %s exited with code %s; starting it again", self.name, code)
            try:
                self._restart()
            except Exception as exc:  # tried again on the next tick
                log.error("cannot start the %s again: %s", self.name, exc)
                continue
            self.restarts += 1

    def stop(self) -> None:
        """Stop watching, then stop the child."""
        self.stopping.set()
        self.thread.join(timeout=5)
        self._stop()


def _supervise_worker(settings: Settings) -> _Supervisor:
    """The worker child, restarted when it dies; stopped with SIGTERM (drain, snapshot)."""
    holder = [_start_worker(settings)]

    def restart() -> None:
        holder[0] = _start_worker(settings)

    return _Supervisor("worker", lambda: holder[0].poll(), restart, lambda: _stop_worker(holder[0]))


def _supervise_server(server: EmbeddedRedis) -> _Supervisor:
    """The embedded server, restarted on its port and data directory when it dies."""

    def poll() -> int | None:
        return None if server.proc is None else server.proc.poll()

    def restart() -> None:
        server.stop()  # reaps the dead process and releases the directory lock
        server.start()

    return _Supervisor("embedded server", poll, restart, server.stop)


def _stop_worker(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("worker did not stop within %.0f s; killing it", timeout)
            proc.kill()
            proc.wait()


def _banner(settings: Settings, redis_url: str, embedded: bool, auth: str = "") -> str:
    from service.store import redact_url

    redis_url = redact_url(redis_url)
    host = "127.0.0.1" if settings.api_host in ("0.0.0.0", "::") else settings.api_host
    base = f"http://{host}:{settings.api_port}"
    model = settings.default_model or "<model>"
    lines = [
        "omtl is up",
        f"  dashboard       {base}/dashboard",
        f"  annotator page  {base}/annotate",
        f"  API docs        {base}/docs",
        f"  API metrics     {base}/metrics",
        f"  worker metrics  http://{host}:{settings.worker_metrics_port}/metrics",
        f"  label requests  {base}/queries?model={model}  (server-sent events)",
        f"                  Redis stream omtl:{{{model}}}:queries on {redis_url}",
        f"  Redis           {redis_url}"
        + (f"  (embedded, data in {settings.data_dir.resolve() / 'redis'})" if embedded else ""),
        "                  `omtl redis-cli <command>` runs a command there",
        *([auth] if auth else []),
        "  Ctrl-C stops everything",
    ]
    return "\n".join(lines)


def run_up(args: argparse.Namespace) -> int:
    """``omtl up``: embedded Redis (unless ``REDIS_URL``), the worker and the API."""
    from service.cli.redis_cli_cmd import embedded_url_file
    from service.embedded_redis import DataDirLocked, EmbeddedRedis
    from service.store.models import ensure_default_model

    settings = _settings(args)
    _logging(settings)
    auth = _auth_line(settings)
    if auth is None:
        return 2
    busy = busy_ports(settings)
    if busy:
        for line in busy:
            print(f"omtl up: {line}", file=sys.stderr)
        return 1
    server: EmbeddedRedis | None = None
    server_watch: _Supervisor | None = None
    worker: _Supervisor | None = None
    # SIGTERM behaves like Ctrl-C: uvicorn shuts down, then the finally block runs
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        if not settings.redis_url:
            server = EmbeddedRedis(
                settings.data_dir / "redis", appendfsync=settings.redis_appendfsync
            )
            try:
                server.start()
            except DataDirLocked as exc:
                print(f"omtl up: {exc}", file=sys.stderr)
                return 1
            settings = settings.model_copy(update={"redis_url": server.url})
            server_watch = _supervise_server(server)
            # where `omtl redis-cli` and `omtl keys` find the embedded server (REDIS_URL unset)
            embedded_url_file(settings.data_dir).write_text(server.url + "\n")
        url = str(settings.redis_url)
        client = redis.Redis.from_url(url)
        try:
            ensure_default_model(client, settings)
        except ValueError as exc:
            print(f"omtl up: cannot create the default model: {exc}", file=sys.stderr)
            return 1
        finally:
            client.close()
        worker = _supervise_worker(settings)
        print(_banner(settings, url, server is not None, auth), flush=True)
        _serve_api(settings)
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        if worker is not None:
            worker.stop()
        if server_watch is not None:
            server_watch.stop()
        elif server is not None:
            server.stop()
        if server is not None:
            embedded_url_file(settings.data_dir).unlink(missing_ok=True)
