"""``POST /predict`` served straight from ASGI, before FastAPI's routing.

``/predict`` is the one endpoint whose cost is dominated by the framework: with
one round trip to Redis and microseconds of numpy, the route matching,
dependency resolution, exception-middleware and response-object layers of a
routed FastAPI endpoint cost more than the work itself. This middleware
recognises ``POST /predict`` and runs the *same* handler the route declares
(:func:`service.api.routes.predict.predict_answer`), with the same body parsing
and validation, and the same exception handlers for every error, so the routed
endpoint (still registered, and documented at ``/docs``) and this path give
identical answers. Any other request goes through FastAPI unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from fastapi import APIRouter, FastAPI
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.context import ApiContext

__all__ = ["PredictFastPath"]

Answer = Callable[[ApiContext, bytes], Awaitable[Any]]

_HEADERS = [(b"content-type", b"application/json")]


class PredictFastPath:
    """Serve ``POST path`` with ``answer(ctx, body)``; everything else passes through.

    ``router`` holds the routed endpoint of ``path``, which documents it and
    answers every other method.
    """

    def __init__(
        self, app: ASGIApp, *, owner: FastAPI, router: APIRouter, path: str, answer: Answer
    ) -> None:
        self.app = app
        self.owner = owner
        self.path = path
        self.answer = answer
        # The routed endpoint, reported as the request's route (metrics label it by its path).
        self.route = next(r for r in router.routes if getattr(r, "path", None) == path)

    def _mine(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != "POST":
            return False
        path: str = scope["path"]
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        return path == self.path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._mine(scope):
            await self.app(scope, receive, send)
            return
        scope["route"] = self.route
        try:
            body = await _read_body(receive)
            answer = await self.answer(self.owner.state.ctx, body)
        except Exception as exc:
            handler = self._handler(exc)
            if handler is None:
                raise
            response = await handler(Request(scope, receive), exc)
            await response(scope, receive, send)
            return
        payload = orjson.dumps(answer, option=orjson.OPT_SERIALIZE_NUMPY)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [*_HEADERS, (b"content-length", b"%d" % len(payload))],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    def _handler(self, exc: Exception) -> Any:
        """The app's exception handler for ``exc`` (most specific class first), if any."""
        handlers = self.owner.exception_handlers
        for cls in type(exc).__mro__:
            if cls in handlers:
                return handlers[cls]
        return None


async def _read_body(receive: Receive) -> bytes:
    """The whole request body."""
    message = await receive()
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        return body
    chunks = [body]
    while message.get("more_body", False):
        message = await receive()
        chunks.append(message.get("body", b""))
    return b"".join(chunks)
