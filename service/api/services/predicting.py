"""``POST /predict``: score events with the latest snapshot and append them to the log.

The score comes from the snapshot version Redis reports in the same round trip
that appends the event, so a prediction is never older than the latest
snapshot at the time of the request. The scores are computed with the cached
view while the append is on its way, and kept when Redis reports no newer
snapshot (the common case); otherwise they are computed again with the new one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from service import metrics
from service.api.cache import ModelView
from service.api.context import ApiContext
from service.api.schemas import PredictBatchRequest, PredictRequest
from service.api.services.appending import (
    Appended,
    Prepared,
    append_with_retry,
    check_count,
    to_x,
)
from service.store.codec import X

__all__ = ["predict", "predict_batch"]


@lru_cache(maxsize=4096)
def _model_metrics(model: str) -> tuple[Any, Any]:
    """The model's predict counter and latency histogram (label lookups cached)."""
    return metrics.PREDICT_REQUESTS.labels(model), metrics.PREDICT_LATENCY.labels(model)


class EarlyScores:
    """Scores computed with a view while the append is in flight, reused for that view."""

    def __init__(self, score: Callable[[ModelView], list[float]]) -> None:
        self._score = score
        self._view: ModelView | None = None
        self._scores: list[float] = []

    def compute(self, view: ModelView) -> None:
        """Score with ``view`` (runs during the round trip to Redis)."""
        self._view, self._scores = view, self._score(view)

    def for_view(self, view: ModelView) -> list[float]:
        """The scores under ``view``: the early ones if it is the same view, else fresh ones."""
        return self._scores if view is self._view else self._score(view)


def _answer(view: ModelView, task: str, score: float, event_id: str | None) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "label": view.label(score),
        "score": score,
        "model_version": view.version,
        "task": task,
    }


async def predict(ctx: ApiContext, req: PredictRequest) -> dict[str, Any]:
    """Predict one event; append it to the log unless ``learn`` is false."""
    started = time.perf_counter()
    name = ctx.model_name(req.model)
    holder: list[X] = []
    scores = EarlyScores(lambda view: [view.score(holder[0], req.task)])

    def prepare(view: ModelView) -> Prepared | None:
        x = to_x(req.x, view.n_features)
        holder[:] = [x]
        return Prepared([req.task], [x], [None], [req.ref]) if req.learn else None

    def then(view: ModelView, appended: Appended) -> dict[str, Any]:
        event_id = appended.event_ids[0] if appended.event_ids else None
        return _answer(view, req.task, scores.for_view(view)[0], event_id)

    answer = await append_with_retry(ctx, name, prepare, then, scores.compute)
    requests, latency = _model_metrics(name)
    requests.inc()
    latency.observe(time.perf_counter() - started)
    return answer


async def predict_batch(ctx: ApiContext, req: PredictBatchRequest) -> dict[str, Any]:
    """Predict many events in order; append them (as one batch entry when all are dense)."""
    started = time.perf_counter()
    check_count(len(req.items), ctx)
    name = ctx.model_name(req.model)
    holder: list[X] = []
    scores = EarlyScores(
        lambda view: [view.score(x, it.task) for it, x in zip(req.items, holder, strict=True)]
    )

    def prepare(view: ModelView) -> Prepared | None:
        xs = [to_x(it.x, view.n_features, f"items[{i}].x") for i, it in enumerate(req.items)]
        holder[:] = xs
        if not req.learn:
            return None
        return Prepared(
            [it.task for it in req.items], xs, [None] * len(xs), [it.ref for it in req.items]
        )

    def then(view: ModelView, appended: Appended) -> dict[str, Any]:
        ids: list[str | None] = list(appended.event_ids) or [None] * len(holder)
        items = [
            _answer(view, it.task, score, eid)
            for it, score, eid in zip(req.items, scores.for_view(view), ids, strict=True)
        ]
        return {"model_version": view.version, "items": items}

    answer = await append_with_retry(ctx, name, prepare, then, scores.compute)
    requests, latency = _model_metrics(name)
    requests.inc(len(req.items))
    latency.observe(time.perf_counter() - started)
    return answer
