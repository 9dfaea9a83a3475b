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

from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
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
    "install_offline_docs",
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


# --- documentation pages without a CDN (docs/architecture.md, "The dashboard and annotator pages")

#: Where the Swagger UI and ReDoc assets are served from.
DOCS_STATIC = "/static/docs"
#: The one CDN address in ReDoc's bundle (an image); the API serves the bundle without it.
_REDOC_CDN_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


class _DocsAssets(StaticFiles):
    """The ``fastapi-offline`` assets, with ReDoc's one CDN link (the attribution logo)
    pointed at the local favicon, so the page makes no request beyond this server."""

    _redoc: bytes | None = None

    async def get_response(self, path: str, scope: Any) -> Response:
        if path != "redoc.standalone.js":
            return await super().get_response(path, scope)
        if self._redoc is None:
            bundle = (Path(str(self.directory)) / path).read_bytes()
            self._redoc = bundle.replace(_REDOC_CDN_LOGO, f"{DOCS_STATIC}/favicon.png".encode())
        return Response(
            self._redoc,
            media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=86400"},
        )


def install_offline_docs(app: FastAPI) -> None:
    """Serve ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) with their JavaScript and CSS
    from the ``fastapi-offline`` package, so both pages work without internet access.

    ``app`` must be built with ``docs_url=None, redoc_url=None``.
    """
    static = Path(fastapi_offline.__file__).parent / "static"
    app.mount(DOCS_STATIC, _DocsAssets(directory=static), name="docs-static")
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


# --- request examples that work as sent (docs/architecture.md, "The dashboard and annotator pages")

#: Model name used by the examples that create and delete a model.
EXAMPLE_MODEL = "example"
#: Key name used by the examples that create and revoke an API key.
EXAMPLE_KEY = "docs-example-viewer"


def _body_examples(n_features: int) -> dict[tuple[str, str], dict[str, Any]]:
    """Request body examples per operation, for a default model of ``n_features``."""
    x = [round(0.1 * (i % 10 + 1), 1) for i in range(n_features)]
    return {
        ("post", "/predict"): {
            "one event": {"task": "task-a", "x": x, "ref": "row-1"},
            "a batch": {"items": [{"task": "task-a", "x": x}, {"task": "task-b", "x": x}]},
            "score only": {"task": "task-a", "x": x, "learn": False},
        },
        ("post", "/events"): {
            "labelled and unlabelled": {
                "events": [{"task": "task-a", "x": x, "y": 1.0}, {"task": "task-b", "x": x}]
            }
        },
        ("post", "/label"): {"a label": {"event_id": "0-0", "y": 1.0, "annotator": "docs"}},
        ("put", "/models/{model}"): {
            "a cmtl model": {"learner": "cmtl", "n_features": 3, "tasks": ["task-a", "task-b"]}
        },
        # the version is replaced by the default model's newest kept snapshot when served
        ("post", "/models/{model}/rollback"): {"the newest kept snapshot": {"version": 1}},
        ("post", "/keys"): {"a read-only key": {"role": "viewer", "name": EXAMPLE_KEY}},
    }


def _parameter_examples(default_model: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Query and path parameter examples per operation (``*``: every method)."""
    return {
        ("put", "/models/{model}"): {"model": EXAMPLE_MODEL},
        ("delete", "/models/{model}"): {"model": EXAMPLE_MODEL},
        ("get", "/queries"): {"model": default_model, "after": "0-0", "limit": 1, "timeout": 2},
        ("get", "/models/{model}/history"): {"limit": 100},
        ("get", "/models/{model}/queries/pending"): {"limit": 10},
        ("post", "/models/import"): {"as": "imported"},
        ("delete", "/keys/{key}"): {"key": EXAMPLE_KEY},
        ("*", "*"): {"model": default_model},
    }


def add_examples(doc: dict[str, Any], n_features: int, default_model: str) -> None:
    """Put request examples into every operation of ``doc``: the bodies of
    :func:`_body_examples` and a value for each path parameter and documented query
    parameter, so that "Try it out" on ``/docs`` answers 2xx as sent."""
    bodies = _body_examples(n_features)
    params = _parameter_examples(default_model)
    for path, operations in doc.get("paths", {}).items():
        for method, operation in operations.items():
            body = bodies.get((method, path))
            content = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is not None and content is not None:
                content["examples"] = {k: {"summary": k, "value": v} for k, v in body.items()}
            chosen = {**params[("*", "*")], **params.get((method, path), {})}
            for parameter in operation.get("parameters", []):
                if parameter.get("in") in ("path", "query") and parameter["name"] in chosen:
                    parameter["example"] = chosen[parameter["name"]]


def _with_body_example(
    doc: dict[str, Any], path: str, method: str, patch: dict[str, Any]
) -> dict[str, Any]:
    """``doc`` with ``patch`` merged into every body example of ``method path``;
    ``doc`` is not changed (it is the app's cached document)."""
    try:
        operation = doc["paths"][path][method]
        body = operation["requestBody"]
        content = body["content"]["application/json"]
        examples = content["examples"]
    except KeyError:
        return doc
    patched = {k: {**v, "value": {**v["value"], **patch}} for k, v in examples.items()}
    new_content = {**content, "examples": patched}
    new_operation = {
        **operation,
        "requestBody": {**body, "content": {**body["content"], "application/json": new_content}},
    }
    return {
        **doc,
        "paths": {**doc["paths"], path: {**doc["paths"][path], method: new_operation}},
    }


def with_live_examples(
    doc: dict[str, Any], event_id: str | None, version: int | None
) -> dict[str, Any]:
    """``doc`` with the examples that depend on the default model's state: ``POST /label``
    names ``event_id`` (a pending label request's event), so that it labels a real event,
    and ``POST /models/{model}/rollback`` names ``version`` (its newest kept snapshot)."""
    if event_id is not None:
        doc = _with_body_example(doc, "/label", "post", {"event_id": event_id})
    if version is not None:
        doc = _with_body_example(doc, "/models/{model}/rollback", "post", {"version": version})
    return doc


def install_examples(app: FastAPI, n_features: int, default_model: str) -> None:
    """Make ``app.openapi()`` carry the request examples of :func:`add_examples`."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = build()
        add_examples(doc, n_features, default_model)
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
