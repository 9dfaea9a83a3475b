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

Security: :func:`needs` marks a route with the role it requires; the document
declares one HTTP bearer scheme (``/docs`` then has an "Authorize" button to
paste a key), each marked operation requires it, names its role in its
description and documents 401 and 403 (see docs/architecture.md,
"Authentication and roles"). Unmarked routes (probes, ``/metrics``) are public.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, Field
from pydantic.json_schema import models_json_schema

from service.auth import Role

__all__ = [
    "ERRORS",
    "LABEL_ERRORS",
    "ErrorBody",
    "UnprocessableBody",
    "ValidationIssue",
    "install",
    "needs",
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


_DOCUMENTED.extend([UnprocessableBody, ErrorBody])


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


#: Name of the security scheme in the document.
SCHEME = "apiKey"
_ROLE = "x-omtl-role"
_ROLE_TEXT = {
    Role.ADMIN: "admin",
    Role.PRODUCER: "producer (or admin)",
    Role.ANNOTATOR: "annotator (or admin)",
    Role.VIEWER: "any role (viewer, producer, annotator, admin)",
}


def needs(role: Role, keys_admin: bool = False, rate_limited: bool = False) -> dict[str, Any]:
    """``openapi_extra`` of a route that needs a key of ``role`` (with ``keys_admin``:
    an admin key not limited to some models; ``rate_limited``: per-key limits, 429)."""
    ref = {"$ref": _REF.format(model=ErrorBody.__name__)}
    text = _ROLE_TEXT[role] + (", not limited to some models" if keys_admin else "")
    limited = {
        "429": {
            "description": "Over the key's rate limit (or the model's backlog bound): retry "
            "after Retry-After seconds.",
            "content": {"application/json": {"schema": ref}},
        }
    }
    return {
        "security": [{SCHEME: []}],
        _ROLE: role.value,
        "x-omtl-role-text": text,
        "responses": (limited if rate_limited else {})
        | {
            "401": {
                "description": "No API key, or not a live one (unknown, revoked).",
                "content": {"application/json": {"schema": ref}},
            },
            "403": {
                "description": "The key's role or models do not allow this.",
                "content": {"application/json": {"schema": ref}},
            },
        },
    }


def _security(doc: dict[str, Any], public_paths: frozenset[str] | None) -> None:
    """Declare the bearer scheme; put each operation's role at the top of its description.
    An unmarked operation outside ``public_paths`` (e.g. ``/metrics`` with
    ``OMTL_METRICS_PUBLIC=false``) needs a key of any role."""
    doc["components"]["securitySchemes"] = {
        SCHEME: {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key from `omtl keys create` or `POST /keys`, sent as "
            "`Authorization: Bearer <key>` (needed unless the service runs with OMTL_AUTH=off).",
        }
    }
    for path, operations in doc.get("paths", {}).items():
        for operation in operations.values():
            if public_paths is not None and path not in public_paths and _ROLE not in operation:
                operation.update(needs(Role.VIEWER))
            text = operation.pop("x-omtl-role-text", None)
            if text is not None:
                described = operation.get("description", "")
                operation["description"] = f"**Role:** {text}.\n\n{described}".rstrip()


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


def install(app: FastAPI, public_paths: frozenset[str] | None = None) -> None:
    """Make ``app.openapi()`` include the schemas of every model given to :func:`raw_body`,
    and the security of every route (``public_paths``: the paths served without a key)."""

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
        _security(doc, public_paths)
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
