"""Model administration and inspection: ``/models``, ``/models/{m}/tasks``, ``/models/{m}/relations``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import anyio.to_thread
import numpy as np

from learners import outlier_reporter, registry
from service.api.cache import ModelView
from service.api.context import ApiContext
from service.api.errors import BadInput, ModelFailed, NotFound
from service.api.schemas import ModelPut
from service.api.services import predicting
from service.api.services.relations import RelationsTooLarge, relations_body
from service.store import StoreReplyError, keys
from service.store.failures import read_failed_async
from service.store.models import (
    ModelConfig,
    ModelLimits,
    delete_model_async,
    get_model_async,
    list_models_async,
    put_model_async,
)

__all__ = ["delete", "describe", "list_all", "put", "relations", "tasks"]


async def _view(ctx: ApiContext, name: str) -> ModelView:
    view = await ctx.cache.current(name)
    if view is None:
        raise NotFound(f"unknown model {name!r}")
    return view


async def _streams(ctx: ApiContext, name: str) -> dict[str, int]:
    async with ctx.redis.pipeline(transaction=False) as p:
        p.xlen(keys.log_key(name))
        p.xlen(keys.dead_key(name))
        log_len, dead_len = await p.execute(raise_on_error=False)
    return {
        "log_entries": int(log_len) if isinstance(log_len, int) else 0,
        "dead_letters": int(dead_len) if isinstance(dead_len, int) else 0,
    }


def _label_requests(view: ModelView) -> dict[str, int]:
    """Label requests issued, answered and pending (issued, not labelled yet) as of the
    snapshot (docs/architecture.md, "Label requests and error figures")."""
    totals = view.snapshot.totals
    return {
        "issued": int(totals.get("label_requests", 0)),
        "answered": int(totals.get("label_requests_answered", 0)),
        "pending": int(view.snapshot.requested.shape[0]),
    }


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


async def _failed_info(ctx: ApiContext, name: str, reason: str) -> dict[str, Any]:
    """What can be said of a model whose configuration or snapshot cannot be loaded:
    the raw configuration fields that parse, the stream lengths and the reason
    (the worker's, when it recorded one)."""
    try:
        stored = await ctx.redis.hgetall(keys.config_key(name))
    except StoreReplyError:  # not even a hash
        stored = {}
    raw = {_text(k): _text(v) for k, v in stored.items()}
    failure = await read_failed_async(ctx.redis, name)

    def number(key: str, cast: type[int] | type[float]) -> Any:
        try:
            return cast(raw.get(key, 0))
        except (TypeError, ValueError):
            return 0

    return {
        "name": name,
        "learner": str(raw.get("learner", "")),
        "params": {},
        "n_features": number("n_features", int),
        "seed": number("seed", int),
        "kind": str(raw.get("kind", "")),
        "tasks": [],
        "generation": number("generation", int),
        "created": number("created", float),
        "version": 0,
        "snapshot_age_seconds": None,
        "last_applied_id": "",
        "counts": await _streams(ctx, name),
        "label_requests": None,
        "status": "failed",
        "failure": failure.reason if failure is not None else reason,
    }


async def _info(ctx: ApiContext, view: ModelView) -> dict[str, Any]:
    name = view.name
    counts = await _streams(ctx, name)
    failure = await read_failed_async(ctx.redis, name)
    totals = {k: int(v.sum()) for k, v in view.snapshot.counters.items()}
    requests = _label_requests(view)
    cfg = view.config
    return {
        "name": name,
        "learner": cfg.learner,
        "params": cfg.params,
        "n_features": cfg.n_features,
        "seed": cfg.seed,
        "kind": cfg.kind or view.snapshot.learner.label_kind,
        "tasks": list(view.snapshot.task_names),
        "generation": cfg.generation,
        "created": cfg.created,
        "version": view.version,
        "snapshot_age_seconds": view.age_seconds(),
        "last_applied_id": view.snapshot.last_id,
        "counts": {**totals, **counts, "label_requests_pending": requests["pending"]},
        "label_requests": requests,
        "status": "ok" if failure is None else "failed",
        "failure": None if failure is None else failure.reason,
        "task_dims": _task_dims(view),
    }


def _task_dims(view: ModelView) -> dict[str, int] | None:
    """The view dimension of every named task of a multiview learner, else None."""
    dims = getattr(view.snapshot.learner, "view_dims", None)
    if dims is None:
        return None
    return {name: int(d) for name, d in zip(view.snapshot.task_names, dims, strict=False)}


def _check_tasks(body: ModelPut) -> None:
    """A multiview learner's rounds name their views by task, so its tasks are named at
    creation; ``params.task_dims`` gives the dimensions of the first tasks in ``tasks``,
    in order: there must be a named task for each (422 otherwise)."""
    try:
        multiview = bool(getattr(registry.get(body.learner), "multiview", False))
    except ValueError:  # an unknown learner: the configuration's check names it
        multiview = False
    if multiview and not body.tasks:
        raise BadInput(
            f"the multiview learner {body.learner!r} takes rounds whose views are named by "
            "task, and tasks can only be named at creation: give them in 'tasks'"
        )
    dims = body.params.get("task_dims")
    if isinstance(dims, list) and len(dims) > len(body.tasks):
        raise BadInput(
            f"params.task_dims gives {len(dims)} dimensions but 'tasks' names "
            f"{len(body.tasks)} task(s): name the tasks, the dimensions go to them in order"
        )


async def describe(ctx: ApiContext, name: str) -> dict[str, Any]:
    """Configuration, snapshot version and age, counts and status of one model
    (a model that cannot be loaded is described as failed, with the reason)."""
    try:
        view = await ctx.cache.current(name)
    except ModelFailed as exc:
        return await _failed_info(ctx, name, exc.reason)
    if view is None:
        raise NotFound(f"unknown model {name!r}")
    return await _info(ctx, view)


async def list_all(ctx: ApiContext) -> list[dict[str, Any]]:
    """:func:`describe` for every model."""
    out = []
    for name in await list_models_async(ctx.redis):
        try:
            out.append(await describe(ctx, name))
        except NotFound:  # deleted meanwhile
            continue
    return out


async def put(ctx: ApiContext, name: str, body: ModelPut) -> tuple[dict[str, Any], bool]:
    """Create or reconfigure ``name``; returns its description and whether it is new."""
    _check_tasks(body)
    existed = await get_model_async(ctx.redis, name) is not None
    config = ModelConfig(
        learner=body.learner,
        params=body.params,
        n_features=body.n_features,
        tasks=body.tasks,
        seed=body.seed,
    )
    try:
        await put_model_async(ctx.redis, name, config, ModelLimits.from_settings(ctx.settings))
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    ctx.cache.forget(name)
    return await describe(ctx, name), not existed


async def delete(ctx: ApiContext, name: str) -> None:
    """Remove ``name`` and all its data."""
    removed = await delete_model_async(ctx.redis, name)
    ctx.cache.forget(name)
    predicting.forget_metrics(name)
    if not removed:
        raise NotFound(f"unknown model {name!r}")


def _outliers(view: ModelView) -> tuple[np.ndarray | None, set[int]]:
    reporter = outlier_reporter(view.snapshot.learner)
    if reporter is None:
        return None, set()
    scores = np.asarray(reporter.outlier_scores(), dtype=np.float64)
    return scores, {int(t) for t in reporter.outlier_tasks()}


def _task_rows(view: ModelView, offset: int, limit: int) -> list[dict[str, Any]]:
    """Rows ``offset .. offset + limit`` of the per-task table (blocking: run in a thread)."""
    names = view.snapshot.task_names
    stop = min(len(names), offset + limit)
    counters = {k: v[offset:stop].tolist() for k, v in view.task_counters().items()}
    regression = view.regression
    errors = {k: v[offset:stop].tolist() for k, v in view.snapshot.errors.items()}
    scores, flagged = _outliers(view)
    out = []
    for j, i in enumerate(range(offset, stop)):
        labels = counters["labels"][j]
        mistakes = counters["mistakes"][j]
        row: dict[str, Any] = {
            "task": names[i],
            "events": counters["events"][j],
            "labels": labels,
            "mistakes": mistakes,
            "label_requests": counters["queries"][j],
            "predictions": counters["predictions"][j],
            "online_accuracy": None,
            "rmse": None,
            "mae": None,
            "outlier_score": None,
            "outlier": None,
        }
        if labels and regression:
            row["rmse"] = math.sqrt(errors["sq_error"][j] / labels)
            row["mae"] = errors["abs_error"][j] / labels
        elif labels:
            row["online_accuracy"] = 1.0 - mistakes / labels
        if scores is not None and i < scores.shape[0]:
            row["outlier_score"] = float(scores[i])
            row["outlier"] = i in flagged
        out.append(row)
    return out


async def tasks(
    ctx: ApiContext, name: str, offset: int = 0, limit: int = 10_000
) -> tuple[list[dict[str, Any]], int]:
    """Per-task counts, online accuracy (rMSE and MAE for regression), label requests and
    outlier fields of the tasks ``offset .. offset + limit``, and the number of tasks
    (docs/architecture.md, "Relations and tasks at scale")."""
    view = await _view(ctx, name)
    rows = await anyio.to_thread.run_sync(_task_rows, view, offset, limit)
    return rows, len(view.snapshot.task_names)


async def relations(
    ctx: ApiContext,
    name: str,
    tasks: Sequence[str] | None = None,
    top_k: int | None = None,
    with_matrix: bool = True,
) -> dict[str, Any]:
    """The relation matrix with its kind and meaning, for a task subset and with the top-k
    related tasks on request; computed in a worker thread, off the event loop
    (docs/architecture.md, "Relations and tasks at scale")."""
    view = await _view(ctx, name)
    try:
        return await anyio.to_thread.run_sync(relations_body, view, tasks, top_k, with_matrix)
    except KeyError as exc:
        raise NotFound(str(exc.args[0])) from None
    except RelationsTooLarge as exc:
        raise BadInput(str(exc)) from None
