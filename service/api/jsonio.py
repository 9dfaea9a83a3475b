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

__all__ = ["json_response", "parse_body", "parse_json", "read_json"]

M = TypeVar("M", bound=BaseModel)


def json_response(content: Any, status_code: int = 200) -> Response:
    """A JSON response serialised by orjson (numpy scalars allowed)."""
    return Response(
        orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY),
        status_code=status_code,
        media_type="application/json",
    )


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
    """Validate parsed JSON against ``model``; a 422 listing every problem otherwise."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False)
        for err in errors:
            err["loc"] = ("body", *err["loc"])
        raise RequestValidationError(errors) from None
