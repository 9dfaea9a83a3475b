"""The steps every write endpoint takes: the model's view, validation, the atomic append.

An append is one call of :data:`service.store.scripts.APPEND_EVENTS` through
the group commit (:class:`service.store.group_commit.GroupCommit`): it writes
nothing unless the model still has the configuration generation the events
were validated against, and answers with the snapshot version Redis has. Dense
events of one request go into a single batch entry (``k=b``, float32 rows,
event ids ``E/i``); a request with any sparse event appends one binary ``k=e``
entry per event.

A service reads top to bottom: :func:`view_of` -> validate (:func:`to_x`,
:func:`check_labels`) -> :func:`start_append` -> its own work while the append
is on its way -> :func:`finish_append`. A request validated against a
configuration that changed meanwhile is run once more against the new one
(:func:`twice_on_stale`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import numpy as np

from service.api.cache import ModelView
from service.api.context import ApiContext
from service.api.errors import ApiError, BadInput, NotFound, PayloadTooLarge, TooBusy
from service.api.schemas import SparseX
from service.store.codec import X, check_float32_range, encode_batch, encode_event, parse_x_json
from service.store.group_commit import AppendReply, Entry

__all__ = [
    "StaleConfiguration",
    "check_count",
    "check_labels",
    "encode_events",
    "event_ids",
    "finish_append",
    "start_append",
    "to_x",
    "twice_on_stale",
    "view_at",
    "view_of",
]

T = TypeVar("T")

#: The Retry-After (seconds) of a 429 for a model whose worker is behind.
RETRY_AFTER_S = 1


class StaleConfiguration(ApiError):
    """The model was reconfigured twice while this request was being validated."""

    status_code = 409


def check_count(n: int, ctx: ApiContext) -> None:
    """Refuse a batch with more than ``max_batch_items`` items (413)."""
    limit = ctx.settings.max_batch_items
    if n > limit:
        raise PayloadTooLarge(f"{n} items in one request; the limit is {limit}")


def to_x(x: list[float] | SparseX, n_features: int, where: str = "x") -> X:
    """A validated feature vector of the model's dimension (422 with the reason otherwise).

    The log stores features as float32: a value beyond float32's range is refused here
    rather than acknowledged and then dead-lettered as infinite.
    """
    if isinstance(x, list):
        if len(x) != n_features:
            raise BadInput(f"{where} has dimension {len(x)}, expected {n_features}")
        dense = np.array(x, dtype=np.float64)
        _check_float32(dense, where)
        return dense
    try:  # the float32 range included (check_float32_range)
        return parse_x_json({"indices": x.indices, "values": x.values}, n_features)
    except ValueError as exc:
        raise BadInput(f"{where}: {exc}") from None


def _check_float32(values: np.ndarray, where: str) -> None:
    try:
        check_float32_range(values, where)
    except ValueError as exc:
        raise BadInput(str(exc)) from None


def check_labels(view: ModelView, ys: Sequence[float | None]) -> None:
    """Refuse labels the model cannot take (422): :meth:`ModelView.label_problem`."""
    for i, y in enumerate(ys):
        if y is None:
            continue
        problem = view.label_problem(y)
        if problem is not None:
            raise BadInput(f"events[{i}].y {problem}")


def encode_events(
    tasks: Sequence[str],
    xs: Sequence[X],
    ys: Sequence[float | None],
    refs: Sequence[str | None],
) -> tuple[list[Entry], bool]:
    """Log entries for validated events and whether they form one batch entry."""
    if len(xs) == 1:
        return [encode_event(tasks[0], xs[0], ys[0], refs[0], binary=True)], False
    if all(isinstance(x, np.ndarray) for x in xs):
        one_task = all(t == tasks[0] for t in tasks)
        batch_refs = refs if any(r is not None for r in refs) else None
        batch_ys = ys if any(y is not None for y in ys) else None
        entry = encode_batch(tasks[0] if one_task else tasks, np.stack(xs), batch_ys, batch_refs)
        return [entry], True
    entries = [
        encode_event(t, x, y, r, binary=True)
        for t, x, y, r in zip(tasks, xs, ys, refs, strict=True)
    ]
    return entries, False


def event_ids(reply: AppendReply, batched: bool, n: int) -> list[str]:
    """The ids of the ``n`` appended events: entry ids, or ``E/i`` for one batch entry."""
    if batched:
        return [f"{reply.ids[0]}/{i}" for i in range(n)]
    return reply.ids


async def view_of(ctx: ApiContext, name: str) -> ModelView:
    """The cached view of the model, else a freshly loaded one (404 for an unknown model)."""
    view = ctx.cache.cached(name) or await ctx.cache.get(name)
    if view is None:
        raise NotFound(f"unknown model {name!r}")
    return view


def start_append(ctx: ApiContext, view: ModelView, entries: list[Entry]) -> Awaitable[AppendReply]:
    """Send ``entries`` (none: only read the snapshot version) on their way to the log.

    A lone append leaves at once, so the work the caller does before
    :func:`finish_append` overlaps the round trip to Redis.
    """
    return ctx.appender.append(view.name, view.generation, entries)


async def finish_append(
    ctx: ApiContext, view: ModelView, pending: Awaitable[AppendReply]
) -> AppendReply | None:
    """Await an append: its reply, or None when the configuration changed (nothing was
    written; the cache is reloaded). 404 when the model is gone; 429 with Retry-After
    when the model's backlog is over ``max_backlog`` (nothing was written)."""
    reply = await pending
    if reply.status == -2:
        raise TooBusy(
            f"model {view.name!r} has {reply.backlog} log entries its worker has not applied "
            f"yet (the bound is {ctx.settings.max_backlog}); nothing was written, retry later",
            RETRY_AFTER_S,
        )
    if reply.status == 0:
        ctx.cache.forget(view.name)
        raise NotFound(f"unknown model {view.name!r}")
    if reply.status == -1:
        await ctx.cache.reload(view.name)
        return None
    return reply


async def view_at(ctx: ApiContext, view: ModelView, version: int) -> ModelView:
    """The view at ``view``'s generation and at least snapshot ``version`` (``view``
    itself while it is new enough)."""
    name, generation = view.name, view.generation
    fresh = ctx.cache.cached_at(name, generation, version) or await ctx.cache.at(
        name, generation, version
    )
    if fresh is None:
        raise NotFound(f"unknown model {name!r}")
    return fresh


async def twice_on_stale(name: str, attempt: Callable[[], Awaitable[T | None]]) -> T:
    """Run ``attempt`` (None = the configuration changed under it) at most twice."""
    for _ in range(2):
        answer = await attempt()
        if answer is not None:
            return answer
    raise StaleConfiguration(f"model {name!r} is being reconfigured; retry the request")
