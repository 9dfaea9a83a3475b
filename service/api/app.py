"""The FastAPI application factory: ``create_app(settings=None)``.

``uvicorn.run("service.api.app:create_app", factory=True)`` serves it. Nothing
happens at import time: the lifespan connects to Redis, creates the default
model from the settings when it does not exist, and closes the connections on
shutdown. The lifespan also warms the learner kernels (numba) before the app
serves, so that no request pays a compilation.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client import start_http_server

import learners
from service import __version__, metrics
from service.api import openapi
from service.api.access import AccessControl
from service.api.context import ApiContext
from service.api.deps import get_context
from service.api.errors import ModelFailed, NotFound, install_handlers
from service.api.fastpath import PredictFastPath
from service.api.jsonio import json_response
from service.api.middleware import PUBLIC_PATHS, AuthMiddleware, GuardMiddleware
from service.api.pages import STATIC_DIR
from service.api.routes import (
    annotate,
    dashboard,
    events,
    health,
    keys,
    label,
    models,
    predict,
    queries,
)
from service.api.services import exporting
from service.api.services.pending import pending_requests
from service.auth.mode import auth_required, read_bootstrap_key
from service.auth.store import ensure_bootstrap_key
from service.settings import Settings, get_settings
from service.store import STORE_UNAVAILABLE, StoreReplyError, connect
from service.store.models import (
    ModelLimits,
    ensure_default_model,
    get_model_async,
    list_models_async,
)

__all__ = ["create_app"]

log = logging.getLogger("omtl.api")

DESCRIPTION = """\
Online multitask learning: predictions from the latest snapshot of each model,
labels joined to earlier events by event id, label requests for annotators.
"""


async def _warm_kernels(ctx: ApiContext, settings: Settings) -> None:
    """Make sure every learner kernel is in numba's cache (compiled now where it lacks
    some), then load into the process the kernels of the learners of the models that
    exist: no request compiles, and the first request of those models does not wait for
    its kernels to load. A model created later loads its learner's kernels as the API
    first reads it (:meth:`service.api.cache.ModelCache.get`). A model whose configuration
    cannot be read or is over the limits is left to its own reads, which report it."""
    start = time.perf_counter()
    compiled = await asyncio.to_thread(learners.ensure_kernels)
    limits = ModelLimits.from_settings(settings)
    loaded: set[str] = set()
    for name in await list_models_async(ctx.redis):
        try:
            config = await get_model_async(ctx.redis, name)
            if config is None:
                continue
            limits.check(
                config.learner, config.n_features, max(1, len(config.tasks)), config.params
            )
            await asyncio.to_thread(learners.load_kernels, config.learner, config.params)
        except (TypeError, ValueError, StoreReplyError, MemoryError) as exc:
            log.warning("model %r: kernels not loaded ahead (%s)", name, exc)
            continue
        loaded.add(config.learner)
    log.info(
        "learner kernels ready in %.2f s (%s; loaded for %s)",
        time.perf_counter() - start,
        "compiled" if compiled else "in the cache",
        ", ".join(sorted(loaded)) or "no model yet",
    )


async def _ensure_default_model(settings: Settings) -> None:
    """Create the settings' default model unless a model of that name exists."""
    if not settings.default_model:
        return
    client = connect(str(settings.redis_url))
    try:
        await asyncio.to_thread(ensure_default_model, client, settings)
    except ValueError as exc:
        log.error("cannot create the default model %r: %s", settings.default_model, exc)
    finally:
        client.close()


async def _register_bootstrap_key(settings: Settings, ctx: ApiContext) -> None:
    """Register the key of ``OMTL_BOOTSTRAP_ADMIN_KEY_FILE`` (docs/architecture.md,
    "Authentication and roles"); the key itself is never logged, only its public id."""
    if settings.bootstrap_admin_key_file is not None:
        token = read_bootstrap_key(settings.bootstrap_admin_key_file)
        log.info(await ensure_bootstrap_key(ctx.redis, token))


def _serve_metrics(settings: Settings) -> Any:
    """The Prometheus metrics on ``OMTL_METRICS_PORT`` (a thread of prometheus_client), if set;
    see docs/architecture.md, "Authentication and roles"."""
    if not settings.metrics_port:
        return None
    server, _ = start_http_server(settings.metrics_port, addr=settings.metrics_host)
    log.info("metrics on http://%s:%d/metrics", settings.metrics_host, settings.metrics_port)
    return server


@lru_cache(maxsize=4096)
def _request_counter(method: str, route: str, status: int) -> Any:
    return metrics.HTTP_REQUESTS.labels(method, route, str(status))


def _observe_request(method: str, route: str, status: int) -> None:
    _request_counter(method, route, status).inc()


def _serve_docs_last(app: FastAPI) -> None:
    """Match the API routes before /docs, /redoc and /openapi.json (routes are tried in order)."""
    routes = app.router.routes
    docs = [r for r in routes if getattr(r, "include_in_schema", True) is False]
    routes[:] = [r for r in routes if r not in docs] + docs


def _install_pages(app: FastAPI) -> None:
    """The dashboard and annotator pages, their assets (package data, no CDN) and data
    endpoints (docs/architecture.md, "The dashboard and annotator pages")."""
    app.mount("/static/pages", StaticFiles(directory=STATIC_DIR), name="pages-static")
    for module in (dashboard, annotate):
        app.include_router(module.router)


def _install_examples(app: FastAPI, settings: Settings) -> None:
    """Request examples in the OpenAPI document that work as sent: ``/openapi.json`` is
    served by a route that names the default model's oldest pending label request in
    the ``POST /label`` example and its newest kept snapshot in the rollback example
    (docs/architecture.md, "The dashboard and annotator pages")."""
    openapi.install_examples(app, settings.default_n_features, settings.default_model)
    url = app.openapi_url or "/openapi.json"
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) != url]

    async def openapi_json(request: Request) -> Response:
        doc = app.openapi()
        event = version = None
        if settings.default_model:
            ctx = get_context(request)
            with contextlib.suppress(NotFound, ModelFailed, *STORE_UNAVAILABLE):
                found = await pending_requests(ctx, settings.default_model, 1, 1000)
                event = found["requests"][0]["event_id"] if found["requests"] else None
            with contextlib.suppress(NotFound, ModelFailed, *STORE_UNAVAILABLE):
                kept = await exporting.versions(ctx, settings.default_model)
                version = kept[0] if kept else None
        return json_response(openapi.with_live_examples(doc, event, version))

    app.add_route(url, openapi_json, include_in_schema=False)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the API for ``settings`` (default: :func:`service.settings.get_settings`)."""
    settings = settings or get_settings()
    # refuses a non-loopback bind address without an explicit OMTL_AUTH
    require_keys = auth_required(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        ctx = ApiContext.connect(settings)
        metrics_server = None
        app.state.ctx = ctx
        app.state.access = AccessControl.build(settings, ctx.redis, require_keys, ctx.run_script)
        try:
            await ctx.redis.ping()
            if ctx.fast is not None:
                await asyncio.wait_for(ctx.fast.call("PING"), timeout=10)
            await _ensure_default_model(settings)
            await _register_bootstrap_key(settings, ctx)
            metrics_server = _serve_metrics(settings)
            await _warm_kernels(ctx, settings)
            # Everything allocated so far (imported modules, the app, the clients) lives as
            # long as the process: kept out of the collector, a full collection costs
            # microseconds instead of pausing every request in flight for milliseconds.
            gc.freeze()
            yield
        finally:
            if metrics_server is not None:
                metrics_server.shutdown()
            await ctx.close()

    # Prometheus metrics are the service's own; FastAPI's OpenTelemetry instrumentation
    # checks its providers on every request, so it runs only when asked for.
    otel = settings.otel
    app = FastAPI(
        telemetry={"tracing": otel, "metrics": otel, "logs": otel},
        title="omtl",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served from installed assets by openapi.install_offline_docs
        redoc_url=None,
    )
    for module in (predict, label, events, queries, models, health, keys):
        app.include_router(module.router)
    _install_pages(app)
    openapi.install_offline_docs(app)
    _serve_docs_last(app)
    install_handlers(app)
    # Added first, so it runs inside the guard (body limit, request counter).
    app.add_middleware(
        PredictFastPath,
        owner=app,
        router=predict.router,
        path="/predict",
    )
    public = PUBLIC_PATHS if settings.metrics_public else PUBLIC_PATHS - {"/metrics"}
    openapi.install(app, public)
    _install_examples(app, settings)
    # Outside the fast path: every path is authenticated, /predict included.
    app.add_middleware(AuthMiddleware, public_paths=public)
    app.add_middleware(
        GuardMiddleware,
        max_body_bytes=settings.max_body_bytes,
        observe=_observe_request,
        # a model import carries a whole snapshot: up to the model budget plus bookkeeping
        large_bodies={"/models/import": settings.max_model_bytes + 256 * 1024**2},
    )
    return app
