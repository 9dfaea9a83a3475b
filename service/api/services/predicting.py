"""``POST /predict``: score events with the latest snapshot and append them to the log.

One request reads top to bottom: validate against the model's view, start the
append (one round trip that also reports the snapshot version Redis has), score
with the cached view while the append is on its way, await the append, score
again only if Redis reports a newer snapshot than the one scored with, answer.
So a prediction is never older than the latest snapshot at the time of the
request, and the common case costs one round trip and one scoring.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

from service import metrics
from service.api.cache import ModelView
from service.api.context import ApiContext
from service.api.schemas import PredictBatchRequest, PredictRequest
from service.api.services import rounds
from service.api.services.appending import (
    check_count,
    encode_events,
    event_ids,
    finish_append,
    start_append,
    to_x,
    twice_on_stale,
    view_at,
    view_of,
)
from service.store.codec import encode_event

__all__ = ["forget_metrics", "predict", "predict_batch"]


@lru_cache(maxsize=4096)
def _model_metrics(model: str) -> tuple[Any, Any]:
    """The model's predict counter and latency histogram (label lookups cached)."""
    return metrics.PREDICT_REQUESTS.labels(model), metrics.PREDICT_LATENCY.labels(model)


def forget_metrics(model: str) -> None:
    """Remove the series of a deleted model (and the cached children that point at them)."""
    _model_metrics.cache_clear()
    metrics.forget_model(model)


def _answer(view: ModelView, task: str, score: float, event_id: str | None) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "label": view.label(score),
        "score": score,
        "model_version": view.version,
        "task": task,
    }


def _score(view: ModelView, x: Any, task: str) -> float:
    """The score of a validated event or multiview round (:class:`rounds.Round`)."""
    if isinstance(x, rounds.Round):
        return rounds.score_round(view, x)
    return view.score(x, task)


def _inputs(view: ModelView, items: list[Any], where: str) -> list[Any]:
    """Validated inputs of the items: feature vectors, or rounds for a multiview model."""
    if rounds.check_forms(view, [it.views is not None for it in items], where):
        return [
            rounds.to_round(view, it.views, it.task, where.format(i=i))
            for i, it in enumerate(items)
        ]
    return [to_x(it.x, view.n_features, f"{where.format(i=i)}.x") for i, it in enumerate(items)]


async def _predict_once(ctx: ApiContext, name: str, req: PredictRequest) -> dict[str, Any] | None:
    """One attempt of :func:`predict`; None when the configuration changed under it."""
    view = await view_of(ctx, name)
    if req.views is not None or rounds.is_multiview(view):
        return await _predict_round_once(ctx, view, req)
    x = to_x(req.x, view.n_features)  # type: ignore[arg-type]  # x is given when views is not
    view.admit((req.task,))
    entries = [encode_event(req.task, x, None, req.ref, binary=True)] if req.learn else []
    pending = start_append(ctx, view, entries)
    score = view.score(x, req.task)
    reply = await finish_append(ctx, view, pending)
    if reply is None:
        return None
    fresh = await view_at(ctx, view, reply.version)
    if fresh is not view:  # a newer snapshot than the one scored with
        view, score = fresh, fresh.score(x, req.task)
    return _answer(view, req.task, score, reply.ids[0] if req.learn else None)


async def _predict_round_once(
    ctx: ApiContext, view: ModelView, req: PredictRequest
) -> dict[str, Any] | None:
    """:func:`_predict_once` of a multiview round (or of the wrong form: a 422)."""
    (r,) = _inputs(view, [req], "body")
    entries = rounds.encode_rounds([r], [None], [req.ref]) if req.learn else []
    pending = start_append(ctx, view, entries)
    score = rounds.score_round(view, r)
    reply = await finish_append(ctx, view, pending)
    if reply is None:
        return None
    fresh = await view_at(ctx, view, reply.version)
    if fresh is not view:
        view, score = fresh, rounds.score_round(fresh, r)
    return _answer(view, req.task, score, reply.ids[0] if req.learn else None)


async def predict(ctx: ApiContext, req: PredictRequest) -> dict[str, Any]:
    """Predict one event; append it to the log unless ``learn`` is false."""
    started = time.perf_counter()
    name = ctx.model_name(req.model)
    answer = await twice_on_stale(name, lambda: _predict_once(ctx, name, req))
    requests, latency = _model_metrics(name)
    requests.inc()
    latency.observe(time.perf_counter() - started)
    return answer


async def _predict_batch_once(
    ctx: ApiContext, name: str, req: PredictBatchRequest
) -> dict[str, Any] | None:
    """One attempt of :func:`predict_batch`; None when the configuration changed under it."""
    view = await view_of(ctx, name)
    items = req.items
    xs = _inputs(view, items, "items[{i}]")
    tasks = [it.task for it in items]
    view.admit(tasks)
    refs = [it.ref for it in items]
    entries, batched = [], False
    if req.learn and rounds.is_multiview(view):
        entries = rounds.encode_rounds(xs, [None] * len(xs), refs)
    elif req.learn:
        entries, batched = encode_events(tasks, xs, [None] * len(xs), refs)
    pending = start_append(ctx, view, entries)
    scores = [_score(view, x, task) for x, task in zip(xs, tasks, strict=True)]
    reply = await finish_append(ctx, view, pending)
    if reply is None:
        return None
    fresh = await view_at(ctx, view, reply.version)
    if fresh is not view:  # a newer snapshot than the one scored with
        view, scores = fresh, [_score(fresh, x, task) for x, task in zip(xs, tasks, strict=True)]
    ids: list[str | None] = list(event_ids(reply, batched, len(xs))) if req.learn else []
    answers = [
        _answer(view, task, score, ids[i] if ids else None)
        for i, (task, score) in enumerate(zip(tasks, scores, strict=True))
    ]
    return {"model_version": view.version, "items": answers}


async def predict_batch(ctx: ApiContext, req: PredictBatchRequest) -> dict[str, Any]:
    """Predict many events in order; append them (as one batch entry when all are dense)."""
    started = time.perf_counter()
    check_count(len(req.items), ctx)
    name = ctx.model_name(req.model)
    answer = await twice_on_stale(name, lambda: _predict_batch_once(ctx, name, req))
    requests, latency = _model_metrics(name)
    requests.inc(len(req.items))
    latency.observe(time.perf_counter() - started)
    return answer
