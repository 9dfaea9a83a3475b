"""Validated events -> log entries -> one atomic append (see :data:`service.store.scripts.APPEND_EVENTS`).

Dense events of one request go into a single batch entry (``k=b``, float32
rows, event ids ``E/i``); a request with any sparse event appends one binary
``k=e`` entry per event. Either way the request costs one round trip, and the
script writes nothing unless the model still has the configuration the events
were validated against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from service.api.cache import ModelView
from service.api.context import ApiContext
from service.api.errors import ApiError, BadInput, NotFound, PayloadTooLarge
from service.api.schemas import SparseX
from service.store.codec import X, encode_batch, encode_event, parse_x_json

__all__ = [
    "Appended",
    "Prepared",
    "append_with_retry",
    "check_count",
    "check_labels",
    "encode_events",
    "to_x",
]

T = TypeVar("T")


@dataclass(slots=True)
class Prepared:
    """Validated events of one request, ready to encode."""

    tasks: list[str]
    xs: list[X]
    ys: list[float | None]
    refs: list[str | None]


@dataclass(slots=True)
class Appended:
    """The result of an append: the snapshot version Redis has and the new event ids."""

    version: int
    event_ids: list[str]


class StaleConfiguration(ApiError):
    """The model was reconfigured twice while this request was being validated."""

    status_code = 409


def check_count(n: int, ctx: ApiContext) -> None:
    """Refuse a batch with more than ``max_batch_items`` items (413)."""
    limit = ctx.settings.max_batch_items
    if n > limit:
        raise PayloadTooLarge(f"{n} items in one request; the limit is {limit}")


def to_x(x: list[float] | SparseX, n_features: int, where: str = "x") -> X:
    """A validated feature vector of the model's dimension (422 with the reason otherwise)."""
    if isinstance(x, list):
        if len(x) != n_features:
            raise BadInput(f"{where} has dimension {len(x)}, expected {n_features}")
        return np.array(x, dtype=np.float64)
    try:
        return parse_x_json({"indices": x.indices, "values": x.values}, n_features)
    except ValueError as exc:
        raise BadInput(f"{where}: {exc}") from None


def encode_events(events: Prepared) -> tuple[list[dict[str, bytes | str]], bool]:
    """Log entries for ``events`` and whether they form one batch entry."""
    if len(events.xs) == 1:
        x, y, ref = events.xs[0], events.ys[0], events.refs[0]
        return [encode_event(events.tasks[0], x, y, ref, binary=True)], False
    if all(isinstance(x, np.ndarray) for x in events.xs):
        tasks = events.tasks
        one_task = all(t == tasks[0] for t in tasks)
        refs = events.refs if any(r is not None for r in events.refs) else None
        ys = events.ys if any(y is not None for y in events.ys) else None
        entry = encode_batch(tasks[0] if one_task else tasks, np.stack(events.xs), ys, refs)
        return [entry], True
    entries = [
        encode_event(t, x, y, r, binary=True)
        for t, x, y, r in zip(events.tasks, events.xs, events.ys, events.refs, strict=True)
    ]
    return entries, False


async def _append(
    ctx: ApiContext,
    view: ModelView,
    events: Prepared | None,
    meanwhile: Callable[[ModelView], None] | None,
) -> Appended | None:
    entries, batched = encode_events(events) if events is not None else ([], False)
    pending = ctx.appender.append(view.name, view.generation, entries)
    if meanwhile is not None:
        # A lone append is already on its way: the work done meanwhile overlaps the
        # round trip to Redis.
        meanwhile(view)
    reply = await pending
    if reply.status == 0:
        ctx.cache.forget(view.name)
        raise NotFound(f"unknown model {view.name!r}")
    if reply.status == -1:
        return None
    ids = reply.ids
    if batched:
        ids = [f"{ids[0]}/{i}" for i in range(len(events.tasks))]  # type: ignore[union-attr]
    return Appended(reply.version, ids)


async def append_with_retry(
    ctx: ApiContext,
    name: str,
    prepare: Callable[[ModelView], Prepared | None],
    then: Callable[[ModelView, Appended], T],
    meanwhile: Callable[[ModelView], None] | None = None,
) -> T:
    """Validate against the model's view, append, and hand the fresh view to ``then``.

    ``prepare`` validates the request for the view (raising a 4xx) and returns
    the events to append, or None to append nothing (``learn=false``). If the
    model was reconfigured in between, the request is validated again against
    the new configuration. ``meanwhile(view)`` runs while the append is on its
    way to Redis (e.g. scoring with the cached view, which ``then`` reuses when
    Redis reports no newer snapshot).
    """
    cache = ctx.cache
    for _ in range(2):
        view = cache.cached(name) or await cache.get(name)
        if view is None:
            raise NotFound(f"unknown model {name!r}")
        appended = await _append(ctx, view, prepare(view), meanwhile)
        if appended is None:
            await cache.reload(name)
            continue
        fresh = cache.cached_at(name, view.generation, appended.version) or await cache.at(
            name, view.generation, appended.version
        )
        if fresh is None:
            raise NotFound(f"unknown model {name!r}")
        return then(fresh, appended)
    raise StaleConfiguration(f"model {name!r} is being reconfigured; retry the request")


def check_labels(view: ModelView, ys: Sequence[float | None]) -> None:
    """Refuse labels outside the model's kind (422)."""
    regression = view.regression
    for i, y in enumerate(ys):
        if y is None:
            continue
        if not regression and y not in (-1.0, 1.0):
            raise BadInput(
                f"events[{i}].y must be -1 or +1 for the classification model "
                f"{view.name!r}, got {y!r}"
            )
