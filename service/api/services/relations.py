"""The task relation matrix as ``/models/{m}/relations`` serves it: kind and meaning, a
task subset, the top-k related tasks per task (docs/architecture.md, "Relations and tasks at scale").

Everything here is plain numpy and runs in a worker thread (the route calls
:func:`relations_body` through ``anyio.to_thread``), so a 5,000-task matrix never
holds the event loop. The matrix of a snapshot is computed once and kept in a
small cache keyed by model, generation and snapshot version; a snapshot never
changes, so the cache needs no invalidation, only a bound.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from service.api.cache import ModelView

__all__ = ["MAX_MATRIX_TASKS", "MAX_TOP_K", "RelationsTooLarge", "relations_body"]

#: Most tasks whose full matrix is sent (500 x 500 values are about 5 MB of JSON);
#: beyond it a request names a subset or asks for ``top_k`` without the matrix.
MAX_MATRIX_TASKS = 500
#: Most related tasks listed per task.
MAX_TOP_K = 100
#: Matrices kept (each K x K float64: 200 MB at K = 5,000).
CACHE_ENTRIES = 2

_Key = tuple[str, int, int]


class RelationsTooLarge(ValueError):
    """The request asks for more of the matrix than one answer carries."""


def _key(view: ModelView) -> _Key:
    """What the matrix depends on: the snapshot version, except for a fixed matrix, which
    changes only with the configuration (generation) and the number of tasks."""
    if view.snapshot.learner.relation_description()[0] == "fixed-interaction":
        return (view.name, view.generation, -len(view.snapshot.task_names))
    return (view.name, view.generation, view.version)


class _MatrixCache:
    """The last few relation matrices, by (model, generation, version); thread-safe."""

    def __init__(self, entries: int) -> None:
        self._entries = entries
        self._lock = threading.Lock()
        self._matrices: OrderedDict[_Key, np.ndarray | None] = OrderedDict()
        self._top: dict[tuple[_Key, int], np.ndarray] = {}

    def matrix(self, view: ModelView) -> np.ndarray | None:
        key = _key(view)
        with self._lock:
            if key in self._matrices:
                self._matrices.move_to_end(key)
                return self._matrices[key]
        raw = view.snapshot.learner.relation_matrix()
        k = len(view.snapshot.task_names)
        matrix = None if raw is None else np.asarray(raw, dtype=np.float64)[:k, :k]
        with self._lock:
            self._matrices[key] = matrix
            while len(self._matrices) > self._entries:
                old, _ = self._matrices.popitem(last=False)
                self._top = {tk: v for tk, v in self._top.items() if tk[0] != old}
        return matrix

    def top_all(self, view: ModelView, matrix: np.ndarray, kind: str, k: int) -> np.ndarray:
        """Top-``k`` column indices of every row, cached per matrix and k (computed in
        blocks of rows, so the temporaries stay small)."""
        key = (_key(view), k)
        with self._lock:
            found = self._top.get(key)
        if found is None:
            every = np.arange(matrix.shape[0])
            blocks = [
                _top_rows(matrix, kind, every[start : start + 256], k)
                for start in range(0, matrix.shape[0], 256)
            ]
            # a model without tasks yet: no rows, no related tasks
            found = np.concatenate(blocks) if blocks else np.zeros((0, 0), dtype=np.int64)
            with self._lock:
                self._top[key] = found
        return found


_CACHE = _MatrixCache(CACHE_ENTRIES)


def _ranking(matrix: np.ndarray, kind: str) -> np.ndarray:
    """What "most related" means: the magnitude of an interaction matrix's entries (their
    sign is the update rule's, not the relation's), the value of every other kind."""
    return np.abs(matrix) if kind.endswith("-interaction") else matrix


#: Up to this k, top-k is k passes of argmax (linear, whatever the ties: a fixed matrix
#: has thousands of equal entries, on which argpartition degrades).
_ARGMAX_K = 16


def _top_of(scored: np.ndarray, k: int) -> np.ndarray:
    """Top-``k`` columns of ``scored`` rows whose own-task entries are already excluded
    (set to -inf by the caller) -- best first, ties by column index. Changes ``scored``."""
    rows = np.arange(scored.shape[0])
    if k <= _ARGMAX_K:
        out = np.empty((scored.shape[0], k), dtype=np.int64)
        for j in range(k):
            best = np.argmax(scored, axis=1)
            out[:, j] = best
            scored[rows, best] = -np.inf
        return out
    order = np.argsort(-scored, axis=1, kind="stable")
    return np.ascontiguousarray(order[:, :k])


def _top_rows(matrix: np.ndarray, kind: str, rows: np.ndarray, k: int) -> np.ndarray:
    """Top-``k`` columns of the ``rows`` of ``matrix``, the row's own task left out."""
    n = matrix.shape[1]
    k = min(k, n - 1)
    if k <= 0:
        return np.zeros((rows.shape[0], 0), dtype=np.int64)
    scored = _ranking(np.array(matrix[rows], dtype=np.float64), kind)
    scored[np.arange(rows.shape[0]), rows] = -np.inf
    return _top_of(scored, k)


def _subset(view: ModelView, names: Sequence[str] | None) -> np.ndarray | None:
    if names is None:
        return None
    index = view.task_index
    unknown = [t for t in names if t not in index]
    if unknown:
        raise KeyError(f"unknown tasks: {', '.join(repr(t) for t in unknown[:10])}")
    return np.fromiter((index[t] for t in dict.fromkeys(names)), dtype=np.int64)


def relations_body(
    view: ModelView,
    tasks: Sequence[str] | None = None,
    top_k: int | None = None,
    with_matrix: bool = True,
) -> dict[str, Any]:
    """The ``/relations`` answer for ``view`` (blocking: call it from a thread).

    ``tasks`` restricts rows and columns of the matrix (and the rows of ``top``);
    ``top_k`` adds, per task, the ``top_k`` most related other tasks of the whole
    model with their values. Raises :class:`KeyError` for an unknown task and
    :class:`RelationsTooLarge` for a full matrix over :data:`MAX_MATRIX_TASKS` tasks.
    """
    names = list(view.snapshot.task_names)
    kind, meaning = view.snapshot.learner.relation_description()
    rows = _subset(view, tasks)
    n_rows = len(names) if rows is None else rows.shape[0]
    if with_matrix and n_rows > MAX_MATRIX_TASKS:
        raise RelationsTooLarge(
            f"the relation matrix of {n_rows} tasks is too large for one answer (at most "
            f"{MAX_MATRIX_TASKS}); name a subset with tasks=a,b,c, or ask top_k=N with matrix=false"
        )
    matrix = _CACHE.matrix(view)
    body: dict[str, Any] = {
        "model": view.name,
        "version": view.version,
        "kind": kind,
        "meaning": meaning,
        "tasks": names if rows is None else [names[i] for i in rows.tolist()],
        "total_tasks": len(names),
        "matrix": None,
    }
    if matrix is None:
        if top_k is not None:
            body["top"] = {}
        return body
    if with_matrix:
        body["matrix"] = (matrix if rows is None else matrix[np.ix_(rows, rows)]).tolist()
    if top_k is not None:
        if rows is None:
            top = _CACHE.top_all(view, matrix, kind, top_k)
            row_ids = np.arange(len(names))
        else:
            top = _top_rows(matrix, kind, rows, top_k)
            row_ids = rows
        values = matrix[row_ids[:, None], top]
        body["top"] = {
            names[r]: [[names[c], v] for c, v in zip(cols, vals)]
            for r, cols, vals in zip(row_ids.tolist(), top.tolist(), values.tolist())
        }
    return body
