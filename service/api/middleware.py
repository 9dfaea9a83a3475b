"""Pure ASGI middlewares: the body size limit and request counter, and the key check.

Written against ASGI directly (not ``BaseHTTPMiddleware``) because it wraps
every ``/predict`` call and must cost microseconds. A ``Content-Length`` beyond
the limit is refused with 413 before the body is read; a chunked body is
counted as it arrives and refused the moment it passes the limit.

:class:`AuthMiddleware` authenticates every request but those to the public
paths (docs/architecture.md, "Authentication and roles") before the
``/predict`` fast path and before routing, so no path escapes it.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.errors import PayloadTooLarge
from service.auth import ANONYMOUS
from service.store import STORE_UNAVAILABLE

__all__ = ["AuthMiddleware", "GuardMiddleware", "RequestObserver", "send_error"]

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
            await send_error(send, 413, f"request body larger than the limit of {limit} bytes")
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


async def send_error(
    send: Send, status: int, message: str, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    """Answer ``{"detail": message}`` with ``status`` (and extra ``headers``)."""
    body = orjson.dumps({"detail": message})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


#: Paths served without a key: probes, metrics, the interactive documentation and the
#: dashboard and annotator pages (their data calls send the key typed into the page).
PUBLIC_PATHS = frozenset(
    {"/health/live", "/health/ready", "/metrics", "/docs", "/docs/oauth2-redirect", "/redoc"}
    | {"/openapi.json", "/dashboard", "/annotate"}
)
#: Path prefixes served without a key: the pages' and the documentation's static assets.
PUBLIC_PREFIXES = ("/static/",)
_CHALLENGE = ((b"www-authenticate", b"Bearer"),)


class AuthMiddleware:
    """Put the request's principal in ``scope["state"]``, or answer 401 / 503.

    The key comes from ``Authorization: Bearer <key>`` and is checked by the
    app's :class:`service.api.access.AccessControl` (``app.state.access``).
    """

    def __init__(self, app: ASGIApp, *, public_paths: frozenset[str] = PUBLIC_PATHS) -> None:
        self.app = app
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        access = scope["app"].state.access
        state = scope.setdefault("state", {})
        if not access.required:
            state["principal"] = ANONYMOUS
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        if path in self.public_paths or path.startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, send)
            return
        token = self._bearer(scope)
        if token is None:
            await send_error(
                send, 401, "missing API key: send Authorization: Bearer <key>", _CHALLENGE
            )
            return
        try:
            principal = await access.verifier.verify(token)
        except STORE_UNAVAILABLE as exc:
            await send_error(send, 503, f"Redis is unavailable, retry later ({exc})")
            return
        if principal is None:
            await send_error(send, 401, "invalid or revoked API key", _CHALLENGE)
            return
        state["principal"] = principal
        await self.app(scope, receive, send)

    @staticmethod
    def _bearer(scope: Scope) -> str | None:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                token = token.strip()
                return token if scheme.lower() == "bearer" and token else None
        return None
