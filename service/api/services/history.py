"""``GET /models/{m}/history``: the worker's history stream, and the curves drawn from it.

Each entry of ``omtl:{m}:history`` holds the model's scalar totals and the
cumulative per-task counters of the tasks that changed since the previous entry
(:mod:`service.worker.history`). :func:`read_history` returns the entries of the
model's current generation, oldest first; :class:`CurveSet` carries each
task's counters forward and gives, per task, the online accuracy (classification)
or rMSE (regression, when the worker records squared-error sums) against the
labels the model had learned in total at that moment. See
``docs/architecture.md``, "The history stream".
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from service.api.context import ApiContext
from service.api.pages.svg import Series
from service.api.services.appending import view_of
from service.store import keys

__all__ = ["CurveSet", "read_history"]


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _entry(entry_id: Any, fields: dict[Any, Any]) -> dict[str, Any] | None:
    """One decoded history entry, or None when it does not parse."""
    f = {_text(k): v for k, v in fields.items()}
    try:
        return {
            "id": _text(entry_id),
            "ts": float(_text(f["ts"])),
            "version": int(_text(f["version"])),
            "generation": int(_text(f["generation"])),
            "totals": orjson.loads(f["totals"]),
            "tasks": orjson.loads(f["tasks"]),
        }
    except (KeyError, ValueError, orjson.JSONDecodeError):
        return None


async def read_history(ctx: ApiContext, name: str, limit: int) -> dict[str, Any]:
    """The newest ``limit`` history entries of the model's current generation, oldest first."""
    view = await view_of(ctx, name)
    raw = await ctx.redis.xrevrange(keys.history_key(name), count=limit) or []
    entries = []
    for entry_id, fields in reversed(raw):
        entry = _entry(entry_id, fields or {})
        if entry is not None and entry["generation"] == view.generation:
            entries.append(entry)
    return {
        "model": name,
        "generation": view.generation,
        "kind": "regression" if view.regression else "classification",
        "entries": entries,
    }


#: Name parts of a per-task counter of squared-error sums (regression models).
_SQUARED = ("squared", "sq_")


def _counter(names: list[str], *parts: str) -> str | None:
    """The first per-task counter whose name contains one of ``parts``."""
    for name in names:
        if any(p in name for p in parts):
            return name
    return None


class CurveSet:
    """Per-task learning curves from history entries (oldest first)."""

    def __init__(self, entries: list[dict[str, Any]], regression: bool) -> None:
        self.regression = regression
        self.x: list[float] = []
        #: per task: the cumulative counters at each entry (carried forward)
        self.points: dict[str, list[tuple[float, dict[str, float]]]] = {}
        #: the counters summed over tasks at each entry
        self.pooled: list[dict[str, float]] = []
        current: dict[str, dict[str, float]] = {}
        running: dict[str, float] = {}
        counter_names: list[str] = []
        for entry in entries:
            tasks = entry["tasks"]
            names = tasks.get("names", [])
            # only the counters a curve needs: labels, mistakes, squared-error sums
            counter_names = [
                k for k in tasks if k in ("labels", "mistakes") or _counter([k], *_SQUARED)
            ]
            columns = [(c, tasks[c]) for c in counter_names]
            changed = []
            for i, task in enumerate(names):
                counts = {c: float(values[i]) for c, values in columns}
                before = current.get(task)
                for c, v in counts.items():
                    running[c] = running.get(c, 0.0) + v - (before.get(c, 0.0) if before else 0.0)
                current[task] = counts  # a new dict per entry: the points keep the old ones
                changed.append((task, counts))
            x = running.get("labels", 0.0)
            self.x.append(x)
            self.pooled.append(dict(running))
            for task, counts in changed:
                self.points.setdefault(task, []).append((x, counts))
        self.latest = current
        self.squared = _counter(counter_names, *_SQUARED)

    @property
    def y_label(self) -> str:
        """What the curves show."""
        if self.regression:
            return "rMSE" if self.squared else "no error sums recorded"
        return "online accuracy"

    def value(self, counts: dict[str, float]) -> float:
        """Accuracy (1 - mistakes / labels) or rMSE (sqrt(squared / labels)); NaN before a label."""
        labels = counts.get("labels", 0.0)
        if labels <= 0:
            return math.nan
        if self.regression:
            if self.squared is None:
                return math.nan
            return math.sqrt(max(0.0, counts.get(self.squared, 0.0)) / labels)
        return 1.0 - counts.get("mistakes", 0.0) / labels

    def top_tasks(self, n: int) -> list[str]:
        """The ``n`` tasks with most labels (ties: by name)."""
        ranked = sorted(self.latest.items(), key=lambda kv: (-kv[1].get("labels", 0.0), kv[0]))
        return [task for task, counts in ranked[:n] if counts.get("labels", 0.0) > 0]

    def series(self, n: int) -> list[Series]:
        """The curve of every task among the ``n`` most labelled, and "all tasks"."""
        out = []
        for task in self.top_tasks(n):
            pts = [(x, self.value(c)) for x, c in self.points[task]]
            pts = [(x, y) for x, y in pts if math.isfinite(y)]
            if pts:
                out.append(Series(task, [p[0] for p in pts], [p[1] for p in pts]))
        overall = self._overall()
        if overall.xs:
            out.insert(0, overall)
        return out

    def _overall(self) -> Series:
        """All tasks pooled, at every entry."""
        xs: list[float] = []
        ys: list[float] = []
        for x, pooled in zip(self.x, self.pooled):
            y = self.value(pooled)
            if math.isfinite(y) and (not xs or xs[-1] != x):
                xs.append(x)
                ys.append(y)
        return Series("all tasks", xs, ys)
