"""Fast JSON in and out for the hot endpoints: orjson on the raw body, pydantic for the shape.

FastAPI's generic body path parses with the standard library and validates
twice; here the body is read once, checked against ``max_body_bytes`` (the
middleware already refused a too-large ``Content-Length``), parsed by orjson and
validated by the endpoint's pydantic model. Errors keep FastAPI's 422 format.
"""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.responses import Response

__all__ = ["json_response", "parse_body", "parse_json", "read_body", "read_json"]

M = TypeVar("M", bound=BaseModel)


class _JsonResponse(Response):
    """A JSON body with its two headers built directly (Starlette's generic header
    assembly costs more than the serialisation of a small answer)."""

    media_type = "application/json"

    def __init__(self, body: bytes, status_code: int) -> None:
        self.status_code = status_code
        self.body = body
        self.background = None
        self.raw_headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
        ]


def json_response(content: Any, status_code: int = 200) -> Response:
    """A JSON response serialised by orjson (numpy scalars allowed)."""
    return _JsonResponse(orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY), status_code)


async def read_body(request: Request) -> bytes:
    """The whole request body, read from the ASGI messages directly.

    Cheaper than ``await request.body()`` for the one read a hot endpoint makes;
    ``request.body()`` cannot be called after it.
    """
    message = await request.receive()
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        return body
    chunks = [body]
    while message.get("more_body", False):
        message = await request.receive()
        chunks.append(message.get("body", b""))
    return b"".join(chunks)


async def read_json(request: Request) -> Any:
    """The request body parsed as JSON; a 422 in FastAPI's format when it is not JSON."""
    return parse_json(await request.body())


def parse_json(body: bytes) -> Any:
    """``body`` parsed as JSON; a 422 in FastAPI's format when it is not JSON."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise RequestValidationError(
            [{"type": "json_invalid", "loc": ("body",), "msg": f"JSON decode error: {exc}"}]
        ) from None


def parse_body(model: type[M], data: Any) -> M:
    """Validate parsed JSON against ``model``, strictly (a string is not a number, a
    boolean not an integer, 3.0 not an integer; an integer is a float); a 422 listing
    every problem otherwise."""
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False)
        for err in errors:
            err["loc"] = ("body", *err["loc"])
        raise RequestValidationError(errors) from None
