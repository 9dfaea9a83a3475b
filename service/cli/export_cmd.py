"""``omtl export``, ``omtl import`` and ``omtl rollback``: move a model between services and
restore an earlier state, through the HTTP API.

See docs/architecture.md, "Export, import and rollback".

* ``omtl export M FILE`` writes ``GET /models/M/export`` to FILE;
* ``omtl import FILE [--as M2]`` sends FILE to ``POST /models/import``;
* ``omtl rollback M VERSION`` calls ``POST /models/M/rollback`` (``omtl rollback M``
  lists the versions kept).
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import urllib.parse
from pathlib import Path
from typing import Any, Protocol

__all__ = ["COMMANDS", "HttpRaw", "RawApi", "export_to", "import_from", "register", "rollback_to"]


class RawApi(Protocol):
    """One HTTP request with a bytes body and a bytes answer."""

    def raw(
        self, method: str, path: str, body: bytes | None = None, content_type: str | None = None
    ) -> tuple[int, bytes]: ...


class CommandFailed(RuntimeError):
    """An error answer of the API, with its detail."""


class HttpRaw:
    """:class:`RawApi` over one HTTP/1.1 connection per request."""

    def __init__(self, base_url: str, timeout: float = 600.0) -> None:
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self._cls = (
            http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        )
        self._host, self._port = url.hostname, url.port
        self._prefix = url.path.rstrip("/")
        self._timeout = timeout

    def raw(
        self, method: str, path: str, body: bytes | None = None, content_type: str | None = None
    ) -> tuple[int, bytes]:
        conn = self._cls(self._host, self._port, timeout=self._timeout)
        try:
            headers = {"content-type": content_type} if content_type else {}
            conn.request(method, self._prefix + path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()


def _json(status: int, data: bytes, ok: int = 200) -> Any:
    if status != ok:
        try:
            detail = json.loads(data).get("detail", data.decode(errors="replace"))
        except (ValueError, AttributeError):
            detail = data.decode(errors="replace")
        raise CommandFailed(f"HTTP {status}: {detail}")
    return json.loads(data)


def export_to(api: RawApi, model: str, path: Path) -> int:
    """Write model ``model``'s export file to ``path``; its size in bytes."""
    status, data = api.raw("GET", f"/models/{urllib.parse.quote(model)}/export")
    if status != 200:
        _json(status, data)
    path.write_bytes(data)
    return len(data)


def import_from(api: RawApi, path: Path, name: str | None = None) -> dict[str, Any]:
    """Create a model from the export file ``path`` (as ``name``); its description."""
    query = "" if name is None else "?" + urllib.parse.urlencode({"as": name})
    status, data = api.raw("POST", f"/models/import{query}", path.read_bytes(), "application/zip")
    result: dict[str, Any] = _json(status, data, ok=201)
    return result


def rollback_to(api: RawApi, model: str, version: int | None) -> dict[str, Any]:
    """Roll ``model`` back to snapshot ``version`` (None: list the versions kept)."""
    quoted = urllib.parse.quote(model)
    if version is None:
        status, data = api.raw("GET", f"/models/{quoted}/snapshots")
        result: dict[str, Any] = _json(status, data)
        return result
    body = json.dumps({"version": version}).encode()
    status, data = api.raw("POST", f"/models/{quoted}/rollback", body, "application/json")
    result = _json(status, data)
    return result


#: The subcommands :func:`register` adds and their one-line help (read from this source by
#: :mod:`service.cli`, which imports only the module of the command run).
COMMANDS = {
    "export": "write a model (configuration + snapshot) to a file",
    "import": "create a model from a file of `omtl export`",
    "rollback": "restore a kept snapshot, discarding the log after it (no VERSION: list)",
}


def register(sub: Any) -> None:
    """Add the ``export``, ``import`` and ``rollback`` subcommands."""
    url_help = "API URL (default from OMTL_API_HOST/PORT)"
    p = sub.add_parser("export", help=COMMANDS["export"])
    p.add_argument("model")
    p.add_argument("file", type=Path)
    p.add_argument("--url", default=None, help=url_help)
    p.set_defaults(func=_run_export)
    p = sub.add_parser("import", help=COMMANDS["import"])
    p.add_argument("file", type=Path)
    p.add_argument("--as", dest="name", default=None, help="name of the new model")
    p.add_argument("--url", default=None, help=url_help)
    p.set_defaults(func=_run_import)
    p = sub.add_parser("rollback", help=COMMANDS["rollback"])
    p.add_argument("model")
    p.add_argument("version", type=int, nargs="?", default=None)
    p.add_argument("--url", default=None, help=url_help)
    p.set_defaults(func=_run_rollback)


def _api(args: argparse.Namespace) -> HttpRaw:
    from service.cli.replay_cmd import default_url

    return HttpRaw(args.url or default_url())


def _guarded(command: str, args: argparse.Namespace, step: Any) -> int:
    try:
        print(step(_api(args)))
    except (CommandFailed, OSError, ValueError) as exc:
        print(f"omtl {command}: {exc}", file=sys.stderr)
        return 1
    return 0


def _run_export(args: argparse.Namespace) -> int:
    return _guarded(
        "export",
        args,
        lambda api: f"wrote {args.file} ({export_to(api, args.model, args.file):,} bytes)",
    )


def _run_import(args: argparse.Namespace) -> int:
    def step(api: RawApi) -> str:
        info = import_from(api, args.file, args.name)
        return (
            f"imported model {info['name']!r}: {info['learner']}, {len(info['tasks'])} tasks, "
            f"snapshot version {info['version']}"
        )

    return _guarded("import", args, step)


def _run_rollback(args: argparse.Namespace) -> int:
    def step(api: RawApi) -> str:
        info = rollback_to(api, args.model, args.version)
        if args.version is None:
            return "snapshot versions kept: " + ", ".join(str(v) for v in info["versions"])
        return (
            f"model {args.model!r} rolled back to snapshot {args.version}: now version "
            f"{info['version']}, generation {info['generation']} (the log after it is discarded)"
        )

    return _guarded("rollback", args, step)
