"""``POST /predict`` served straight from ASGI, before FastAPI's routing.

``/predict`` is the one endpoint whose cost is dominated by the framework: with
one round trip to Redis and microseconds of numpy, the route matching,
dependency resolution, exception-middleware and response-object layers of a
routed FastAPI endpoint cost more than the work itself. This middleware
recognises ``POST /predict`` and calls the routed endpoint itself
(:func:`service.api.routes.predict.predict`, found in the router) with the
request, and the app's exception handlers for every error, so the routed
endpoint (still registered, and documented at ``/docs``) and this path run the
same function and give identical answers. Any other request goes through
FastAPI unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, FastAPI
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["PredictFastPath"]


class PredictFastPath:
    """Serve ``POST path`` with the endpoint ``router`` declares for it; everything else
    passes through (the router answers every other method of ``path``)."""

    def __init__(self, app: ASGIApp, *, owner: FastAPI, router: APIRouter, path: str) -> None:
        self.app = app
        self.owner = owner
        self.path = path
        # The routed endpoint, reported as the request's route (metrics label it by its path).
        self.route = next(r for r in router.routes if getattr(r, "path", None) == path)
        self.endpoint: Callable[[Request], Awaitable[Response]] = self.route.endpoint  # type: ignore[attr-defined]

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
        request = Request(scope, receive)
        try:
            response = await self.endpoint(request)
        except Exception as exc:
            handler = self._handler(exc)
            if handler is None:
                raise
            response = await handler(request, exc)
        await response(scope, receive, send)

    def _handler(self, exc: Exception) -> Any:
        """The app's exception handler for ``exc`` (most specific class first), if any."""
        handlers = self.owner.exception_handlers
        for cls in type(exc).__mro__:
            if cls in handlers:
                return handlers[cls]
        return None
