"""OpenAPI documentation of the endpoints that parse their raw body themselves.

``raw_body(A, B)`` gives a route's ``openapi_extra`` that documents a JSON body
of model A (or B); :func:`install` adds the models' JSON schemas to the
document's components, so ``/docs`` shows exactly the models the server
validates with.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

__all__ = ["ERRORS", "LABEL_ERRORS", "ErrorBody", "install", "raw_body"]

_REF = "#/components/schemas/{model}"
_DOCUMENTED: list[type[BaseModel]] = []


class ErrorBody(BaseModel):
    """Every 4xx answer: what was wrong."""

    detail: str


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    text = {
        404: "Unknown model, or unknown / expired event.",
        409: "Conflict (e.g. a different label for an already labelled event).",
        413: "Body larger than max_body_bytes, or more items than max_batch_items.",
        422: "Invalid body: wrong types, wrong dimension, label outside the model's kind.",
    }
    return {c: {"model": ErrorBody, "description": text[c]} for c in codes}


#: Common error documentation of the write endpoints.
ERRORS = _errors(404, 413, 422)
LABEL_ERRORS = _errors(404, 409, 413, 422)


def raw_body(*models: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` documenting a required JSON body of one of ``models``."""
    _DOCUMENTED.extend(m for m in models if m not in _DOCUMENTED)
    refs = [{"$ref": _REF.format(model=m.__name__)} for m in models]
    schema = refs[0] if len(refs) == 1 else {"oneOf": refs}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def install(app: FastAPI) -> None:
    """Make ``app.openapi()`` include the schemas of every model given to :func:`raw_body`."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        _, defs = models_json_schema([(m, "validation") for m in _DOCUMENTED], ref_template=_REF)
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        for name, schema in defs.get("$defs", {}).items():
            schemas.setdefault(name, schema)
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
