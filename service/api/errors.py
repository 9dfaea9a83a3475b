"""Errors the service layer raises, and how the app turns them into 4xx answers.

Every rejection carries a message that says what was wrong, in FastAPI's usual
``{"detail": ...}`` shape. Validation errors of bodies keep FastAPI's 422 list
format (:class:`fastapi.exceptions.RequestValidationError`).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from starlette.responses import Response

from service.api.jsonio import json_response
from service.store import STORE_UNAVAILABLE
from service.store.models import ModelTooLarge

log = logging.getLogger("omtl.api")

__all__ = [
    "ApiError",
    "BadInput",
    "Conflict",
    "ModelFailed",
    "NotFound",
    "PayloadTooLarge",
    "install_handlers",
]


class ApiError(Exception):
    """An error with an HTTP status and a message for the client."""

    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(ApiError):
    """Unknown model, or unknown / expired event."""

    status_code = 404


class Conflict(ApiError):
    """The event already carries a different label."""

    status_code = 409


class ModelFailed(ApiError):
    """The model's configuration or snapshot in Redis cannot be loaded (503 with the reason)."""

    status_code = 503

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"model {name!r} is failed: {reason}")
        self.reason = reason


class PayloadTooLarge(ApiError):
    """The body exceeds ``max_body_bytes`` or the batch ``max_batch_items``."""

    status_code = 413


class BadInput(ApiError):
    """A body that parses but does not fit the model (dimension, NaN, label kind)."""

    status_code = 422


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return json_response({"detail": exc.message}, status_code=exc.status_code)


async def _too_large(request: Request, exc: Exception) -> Response:
    return json_response({"detail": str(exc)}, status_code=409)


async def _redis_unavailable(request: Request, exc: Exception) -> Response:
    log.warning("Redis unavailable during %s %s: %s", request.method, request.url.path, exc)
    return json_response(
        {"detail": f"Redis is unavailable, retry later ({type(exc).__name__}: {exc})"},
        status_code=503,
    )


def install_handlers(app: FastAPI) -> None:
    """Register the handlers: :class:`ApiError` -> its status; a model that may not
    grow by a task (:class:`ModelTooLarge`) -> 409; Redis unreachable -> 503."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(ModelTooLarge, _too_large)
    for error in STORE_UNAVAILABLE:
        app.add_exception_handler(error, _redis_unavailable)
