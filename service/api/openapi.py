"""OpenAPI documentation of the endpoints that parse their raw body themselves.

``raw_body(A, B)`` gives a route's ``openapi_extra`` that documents a JSON body
of model A (or B); :func:`install` adds the models' JSON schemas to the
document's components, so ``/docs`` shows exactly the models the server
validates with.

Error bodies are documented as they are answered: ``{"detail": "message"}``
(:class:`ErrorBody`) for 404, 409, 413 and 503, and for 422 either that or
FastAPI's list of validation issues (:class:`UnprocessableBody`): a body that
is not JSON (including invalid UTF-8) or does not fit the request model lists
every problem, a body that parses but does not fit the model (dimension, NaN,
label kind, learner) gives one message. :func:`install` also replaces
FastAPI's default 422 schema (``HTTPValidationError``) by that one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from pydantic.json_schema import models_json_schema

__all__ = [
    "ERRORS",
    "LABEL_ERRORS",
    "ErrorBody",
    "UnprocessableBody",
    "ValidationIssue",
    "install",
    "install_offline_docs",
    "raw_body",
]

_REF = "#/components/schemas/{model}"
_DOCUMENTED: list[type[BaseModel]] = []


class ErrorBody(BaseModel):
    """A 404, 409, 413 or 503 answer (and some 422s): what was wrong."""

    detail: str


class ValidationIssue(BaseModel):
    """One problem of a body that is not JSON or does not fit the request model."""

    type: str = Field(description="e.g. 'json_invalid', 'missing', 'string_type'.")
    loc: list[str | int] = Field(description="Where: ['body', field, ...].")
    msg: str
    input: Any = None


class UnprocessableBody(BaseModel):
    """A 422 answer: one message, or the list of every validation issue."""

    detail: str | list[ValidationIssue]


_DOCUMENTED.append(UnprocessableBody)


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    text = {
        404: "Unknown model, or unknown / expired event.",
        409: "Conflict (e.g. a different label for an already labelled event, or a task "
        "beyond the model's limits).",
        413: "Body larger than max_body_bytes, or more items than max_batch_items.",
        422: "Invalid body: not JSON or not UTF-8, wrong types (a list of issues); wrong "
        "dimension, label outside the model's kind, invalid learner, over the model's "
        "limits (a message).",
        503: "Redis is unavailable, or the model is failed (its state cannot be loaded).",
    }
    return {
        c: {"model": UnprocessableBody if c == 422 else ErrorBody, "description": text[c]}
        for c in codes
    }


#: Common error documentation of the write endpoints.
ERRORS = _errors(404, 409, 413, 422, 503)
LABEL_ERRORS = ERRORS


def raw_body(*models: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` documenting a required JSON body of one of ``models``."""
    _DOCUMENTED.extend(m for m in models if m not in _DOCUMENTED)
    refs = [{"$ref": _REF.format(model=m.__name__)} for m in models]
    schema = refs[0] if len(refs) == 1 else {"oneOf": refs}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def _one_422_schema(doc: dict[str, Any]) -> None:
    """Every 422 of the document refers to :class:`UnprocessableBody` (FastAPI adds its
    own ``HTTPValidationError`` to routes with parameters)."""
    ref = {"$ref": _REF.format(model=UnprocessableBody.__name__)}
    for operations in doc.get("paths", {}).values():
        for operation in operations.values():
            answer = operation.get("responses", {}).get("422")
            if answer is not None:
                answer["content"] = {"application/json": {"schema": ref}}
    schemas = doc["components"]["schemas"]
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)


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
        _one_422_schema(doc)
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]


# --- documentation pages without a CDN (docs/architecture.md, "The dashboard and annotator pages")

#: Where the Swagger UI and ReDoc assets are served from.
DOCS_STATIC = "/static/docs"


def install_offline_docs(app: FastAPI) -> None:
    """Serve ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) with their JavaScript and CSS
    from the ``fastapi-offline`` package, so both pages work without internet access.

    ``app`` must be built with ``docs_url=None, redoc_url=None``.
    """
    static = Path(fastapi_offline.__file__).parent / "static"
    app.mount(DOCS_STATIC, StaticFiles(directory=static), name="docs-static")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{DOCS_STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_STATIC}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{DOCS_STATIC}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{DOCS_STATIC}/favicon.png",
            with_google_fonts=False,
        )
