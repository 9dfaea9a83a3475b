"""``omtl redis-cli``: run one Redis command against the service's server.

The server is ``REDIS_URL`` when set, else the embedded server that ``omtl up``
started on the data directory (its URL is in ``<data dir>/redis/url``, since it
listens on a port chosen at start). Replies are printed the way ``redis-cli``
prints them when its output is not a terminal: one value per line, nested
replies flattened (docs/architecture.md, "The command line"). So the README's
examples work as written, with no Redis client installed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from service.settings import get_settings

__all__ = ["COMMANDS", "embedded_url_file", "register", "server_url"]


def embedded_url_file(data_dir: Path) -> Path:
    """Where ``omtl up`` records the URL of the embedded server of ``data_dir``."""
    return data_dir / "redis" / "url"


def server_url(data_dir: Path | None = None) -> str | None:
    """``REDIS_URL``, else the URL ``omtl up`` recorded for the data directory, else None."""
    settings = get_settings()
    if settings.redis_url:
        return str(settings.redis_url)
    path = embedded_url_file(data_dir or settings.data_dir)
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


#: The subcommands :func:`register` adds and their one-line help (read from this source by
#: :mod:`service.cli`, which imports only the module of the command run).
COMMANDS = {
    "redis-cli": "run a Redis command on the service's server (REDIS_URL or the embedded one)",
}


def register(sub: Any) -> None:
    """Add the ``redis-cli`` subcommand."""
    p = sub.add_parser("redis-cli", help=COMMANDS["redis-cli"])
    p.add_argument("--data-dir", default=None, help="data directory of `omtl up` (OMTL_DATA_DIR)")
    p.add_argument("words", nargs=argparse.REMAINDER, help="the command, e.g. XLEN 'omtl:{m}:log'")
    p.set_defaults(func=run)


def _lines(reply: Any) -> list[str]:
    if reply is None:
        return [""]
    if isinstance(reply, bytes):
        return [reply.decode("utf-8", "backslashreplace")]
    if isinstance(reply, list | tuple):
        return [line for item in reply for line in _lines(item)]
    if isinstance(reply, dict):
        return [line for kv in reply.items() for item in kv for line in _lines(item)]
    if isinstance(reply, bool):
        return ["1" if reply else "0"]
    return [str(reply)]


def run(args: argparse.Namespace) -> int:
    """Run ``omtl redis-cli``."""
    import redis

    url = server_url(Path(args.data_dir) if args.data_dir else None)
    if url is None:
        print(
            "omtl redis-cli: no server: set REDIS_URL, or start `omtl up` (its embedded "
            "server's URL is kept in <data dir>/redis/url)",
            file=sys.stderr,
        )
        return 2
    if not args.words:
        print(url)
        return 0
    client = redis.Redis.from_url(url, decode_responses=False, socket_timeout=None)
    try:
        reply = client.execute_command(*args.words)
    except redis.ResponseError as exc:
        print(f"(error) {exc}")
        return 1
    except redis.ConnectionError as exc:
        print(f"omtl redis-cli: cannot reach {url}: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
    print("\n".join(_lines(reply)))
    return 0
