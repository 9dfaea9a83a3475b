"""What the dashboard shows of one model, in one answer (``GET /dashboard/data/{m}``).

The model's description (``GET /models/{m}``), whether a worker serves it
(a fresh heartbeat), label requests issued / answered / pending, the log's
backlog (log lag), the most labelled tasks with their figures,
outlier tasks, the newest dead letters, and two server-rendered SVG pictures: the
task relation matrix of the most labelled tasks, with what the matrix means for
this learner, and the per-task learning curves from the history stream. The
pictures are drawn in a thread, off the event loop. See ``docs/architecture.md``,
"The dashboard and annotator pages".
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from service.api.cache import ModelView
from service.api.context import ApiContext
from service.api.pages.svg import curves_svg, heatmap_svg
from service.api.services import modelling
from service.api.services.appending import view_of
from service.api.services.history import CurveSet, read_history
from service.store import keys

__all__ = ["HEATMAP_TASKS", "summary"]

#: Tasks shown in the heatmap and the task table (the most labelled ones).
HEATMAP_TASKS = 24
#: Task curves drawn (besides "all tasks").
CURVE_TASKS = 7
#: History entries the curves are drawn from.
HISTORY_ENTRIES = 600


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def relation_description(view: ModelView) -> tuple[str, str]:
    """``(kind, meaning)`` of the learner's relation matrix, as the learner declares it."""
    learner = view.snapshot.learner
    describe = getattr(learner, "relation_description", None)
    if callable(describe):
        kind, meaning = describe()
        return str(kind), str(meaning)
    if learner.relation_matrix() is None:
        return "none", "This learner keeps no task relation matrix."
    return "unknown", "The learner's task relation matrix (its meaning is not declared)."


#: The last heatmap per model, by (generation, snapshot version, tasks shown): a learner
#: may compute its K x K matrix on every call, and every open dashboard asks every 2 s.
_HEATMAPS: dict[str, tuple[tuple[int, int, tuple[int, ...]], dict[str, Any]]] = {}


def _cached_heatmap(view: ModelView, order: list[int]) -> dict[str, Any]:
    """:func:`_heatmap`, computed once per snapshot version of the model."""
    key = (view.generation, view.version, tuple(order))
    cached = _HEATMAPS.get(view.name)
    if cached is not None and cached[0] == key:
        return cached[1]
    out = _heatmap(view, order)
    _HEATMAPS[view.name] = (key, out)
    return out


def _heatmap(view: ModelView, order: list[int]) -> dict[str, Any]:
    """The relation matrix of the tasks ``order`` (indices) as SVG, with its kind."""
    kind, meaning = relation_description(view)
    matrix = view.snapshot.learner.relation_matrix()
    names = view.snapshot.task_names
    out: dict[str, Any] = {"kind": kind, "meaning": meaning, "tasks": [], "svg": None}
    if matrix is None or not order:
        return out
    m = np.asarray(matrix, dtype=np.float64)
    idx = [i for i in order if i < m.shape[0]]
    sub = m[np.ix_(idx, idx)]
    tasks = [names[i] for i in idx]
    out["tasks"] = tasks
    out["shown_of"] = len(names)
    out["svg"] = heatmap_svg(tasks, sub)
    return out


def _curves(entries: list[dict[str, Any]], regression: bool) -> dict[str, Any]:
    curves = CurveSet(entries, regression)
    series = curves.series(CURVE_TASKS)
    y_range = None if regression else (0.0, 1.0)
    return {
        "metric": curves.y_label,
        "entries": len(entries),
        "series": [s.name for s in series],
        "svg": curves_svg(series, "labels learned (all tasks)", curves.y_label, y_range),
    }


def _task_rows(rows: list[dict[str, Any]], order: list[int]) -> list[dict[str, Any]]:
    return [rows[i] for i in order if i < len(rows)]


async def _streams(ctx: ApiContext, name: str, generation: int) -> dict[str, Any]:
    """Log backlog, the newest dead letters, and whether a worker's heartbeat is fresh."""
    async with ctx.redis.pipeline(transaction=False) as p:
        p.xlen(keys.log_key(name))
        p.hgetall(keys.progress_key(name))
        p.xrevrange(keys.dead_key(name), count=5)
        p.exists(keys.heartbeat_key(name))
        log_len, progress, dead, beating = await p.execute(raise_on_error=False)
    applied = 0
    if isinstance(progress, dict):
        fields = {_text(k): _text(v) for k, v in progress.items()}
        if fields.get("generation") == str(generation):
            applied = int(fields.get("applied", 0) or 0)
    letters = []
    if isinstance(dead, list):
        for entry_id, fields in dead:
            f = {_text(k): _text(v) for k, v in fields.items() if _text(k) != "fields"}
            letters.append({"id": _text(entry_id), **f})
    backlog = max(0, int(log_len) - applied) if isinstance(log_len, int) else None
    return {"log_lag": backlog, "dead_letters": letters, "worker_alive": beating == 1}


def _label_requests(info: dict[str, Any]) -> dict[str, int]:
    """Issued / answered / pending, as the model's snapshot counts them
    (docs/architecture.md, "Label requests and error figures")."""
    given = info["label_requests"]
    return {k: int(given.get(k, 0)) for k in ("issued", "answered", "pending")}


#: Every task: the heatmap picks the most-labelled ones, the table and outliers list all.
ALL_TASKS = 1 << 30


async def summary(ctx: ApiContext, name: str) -> dict[str, Any]:
    """Everything the dashboard shows of model ``name`` (see the module docstring)."""
    info = await modelling.describe(ctx, name)
    if info.get("status") == "failed":
        return {"model": info, "failed": True}
    view = await view_of(ctx, name)
    rows, _ = await modelling.tasks(ctx, name, limit=ALL_TASKS)
    order = sorted(range(len(rows)), key=lambda i: (-rows[i]["labels"], i))[:HEATMAP_TASKS]
    history = await read_history(ctx, name, HISTORY_ENTRIES)
    heatmap, curves = await asyncio.gather(
        asyncio.to_thread(_cached_heatmap, view, order),
        asyncio.to_thread(_curves, history["entries"], view.regression),
    )
    return {
        "model": info,
        "failed": False,
        "kind": history["kind"],
        "label_requests": _label_requests(info),
        **await _streams(ctx, name, view.generation),
        "tasks": _task_rows(rows, order),
        "task_count": len(rows),
        "outliers": [r["task"] for r in rows if r.get("outlier")],
        "relations": heatmap,
        "curves": curves,
    }
