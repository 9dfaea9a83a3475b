"""A pure ASGI middleware: the body size limit and the HTTP request counter.

Written against ASGI directly (not ``BaseHTTPMiddleware``) because it wraps
every ``/predict`` call and must cost microseconds. A ``Content-Length`` beyond
the limit is refused with 413 before the body is read; a chunked body is
counted as it arrives and refused the moment it passes the limit.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.errors import PayloadTooLarge

__all__ = ["GuardMiddleware", "RequestObserver"]

#: Called once per HTTP request with (method, route template, status code).
RequestObserver = Callable[[str, str, int], None]


class GuardMiddleware:
    """Refuse bodies larger than ``max_body_bytes`` and report every request."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        observe: RequestObserver,
        large_bodies: dict[str, int] | None = None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.observe = observe
        #: paths whose bodies may be larger (e.g. a model import), with their limit
        self.large_bodies = large_bodies or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        limit = self.large_bodies.get(scope["path"], self.max_body_bytes)
        declared = self._declared_length(scope)
        if declared is not None and declared > limit:
            status = 413
            await self._refuse(send, f"request body larger than the limit of {limit} bytes")
            self.observe(scope["method"], "unmatched", status)
            return
        seen = 0

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise PayloadTooLarge(f"request body larger than the limit of {limit} bytes")
            return message

        async def recorded_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        # With a Content-Length the server delivers exactly that many bytes; only a
        # chunked body has to be counted as it arrives.
        try:
            await self.app(
                scope, receive if declared is not None else counted_receive, recorded_send
            )
        finally:
            route = scope.get("route")
            self.observe(scope["method"], getattr(route, "path", "unmatched"), status)

    @staticmethod
    def _declared_length(scope: Scope) -> int | None:
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    return int(value)
                except ValueError:
                    return None
        return None

    @staticmethod
    async def _refuse(send: Send, message: str) -> None:
        body = orjson.dumps({"detail": message})
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
