"""A small HTTP client of the API (standard library only), used by ``omtl replay`` / ``omtl annotate``.

:class:`Api` is the protocol the commands need: ``request`` for JSON calls and
``sse`` for the label-request stream. :class:`HttpApi` implements it over a
keep-alive ``http.client`` connection; tests implement it over the ASGI app.
It sends the API key in ``OMTL_API_KEY`` (if set) as ``Authorization: Bearer``
(docs/architecture.md, "Authentication and roles").
"""

from __future__ import annotations

import http.client
import os
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import orjson

__all__ = ["API_KEY_ENV", "Api", "ApiCallError", "HttpApi", "sse_messages"]

#: Environment variable holding the API key `omtl replay` and `omtl annotate` send.
API_KEY_ENV = "OMTL_API_KEY"


class ApiCallError(RuntimeError):
    """The service answered with an unexpected status."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


class Api(Protocol):
    """What the command-line tools need from the service."""

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """Send a JSON request; returns ``(status, parsed JSON or None)``."""
        ...

    def sse(self, path: str, params: dict[str, Any]) -> Iterator[str]:
        """The lines of a server-sent-events response."""
        ...


def sse_messages(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Parse SSE lines into messages ``{"id", "event", "data"}`` (comments skipped)."""
    message: dict[str, Any] = {}
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if "data" in message:
                yield message
            message = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            message["data"] = message["data"] + "\n" + value if "data" in message else value
        elif name in ("id", "event"):
            message[name] = value
    if "data" in message:
        yield message


class HttpApi:
    """:class:`Api` over HTTP/1.1 keep-alive, e.g. ``HttpApi("http://127.0.0.1:8000")``."""

    def __init__(self, base_url: str, timeout: float = 30.0, key: str | None = None) -> None:
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._https else 80)
        self._prefix = url.path.rstrip("/")
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None
        key = key or os.environ.get(API_KEY_ENV)
        self._auth = {"authorization": f"Bearer {key}"} if key else {}

    def _connect(self, timeout: float | None) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """Send one JSON request on the kept-alive connection (reconnecting once if it closed)."""
        payload = None if body is None else orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
        headers = {"content-type": "application/json"} if payload is not None else {}
        headers.update(self._auth)
        for attempt in range(2):
            if self._conn is None:
                self._conn = self._connect(self._timeout)
            try:
                self._conn.request(method, self._prefix + path, body=payload, headers=headers)
                response = self._conn.getresponse()
                data = response.read()
            except (ConnectionError, http.client.HTTPException):
                self.close()
                if attempt:
                    raise
                continue
            parsed = orjson.loads(data) if data else None
            return response.status, parsed
        raise AssertionError("unreachable")

    def sse(self, path: str, params: dict[str, Any]) -> Iterator[str]:
        """Stream the lines of ``GET path?params`` on a connection of its own."""
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        conn = self._connect(None)
        try:
            conn.request("GET", f"{self._prefix}{path}?{query}", headers=self._auth)
            response = conn.getresponse()
            if response.status != 200:
                raise ApiCallError(response.status, response.read().decode(errors="replace"))
            for line in response:
                yield line.decode()
        finally:
            conn.close()

    def close(self) -> None:
        """Close the kept-alive connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
