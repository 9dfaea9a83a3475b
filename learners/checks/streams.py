"""Seeded synthetic multitask streams for the conformance checks and doctests."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["Stream", "related_tasks"]


@dataclass(frozen=True)
class Stream:
    """An interleaved multitask stream: row ``i`` is ``(X[i], y[i], task[i])``."""

    X: np.ndarray
    y: np.ndarray
    task: np.ndarray

    def __len__(self) -> int:
        return int(self.X.shape[0])

    def __iter__(self):  # type: ignore[no-untyped-def]
        return zip(self.X, self.y.tolist(), self.task.tolist(), strict=True)


def related_tasks(
    n: int = 3000,
    n_tasks: int = 4,
    n_features: int = 10,
    *,
    kind: str = "classification",
    relatedness: float = 0.3,
    margin: float = 0.05,
    noise: float = 0.0,
    seed: int = 0,
) -> Stream:
    """Tasks whose weight vectors are close to a shared one: ``w_k = w0 + relatedness * u_k``.

    Classification labels are ``sign(w_k . x)`` with points closer than ``margin``
    to the task's hyperplane removed (so the stream is linearly separable with a
    margin); regression targets are ``w_k . x + noise * N(0, 1)``. Inputs are unit
    vectors; tasks are drawn uniformly. Each call returns arrays of its own (the stream
    of a set of arguments is drawn once per process: every conformance check draws its
    streams afresh, thousands of times in a run of the suite).
    """
    X, y, task = _drawn(n, n_tasks, n_features, kind, relatedness, margin, noise, seed)
    return Stream(X.copy(), y.copy(), task.copy())


@lru_cache(maxsize=64)
def _drawn(
    n: int,
    n_tasks: int,
    n_features: int,
    kind: str,
    relatedness: float,
    margin: float,
    noise: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arrays of :func:`related_tasks` (read-only: callers get copies)."""
    rng = np.random.default_rng(seed)
    w0 = rng.normal(size=n_features)
    W = w0 + relatedness * rng.normal(size=(n_tasks, n_features))
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    rows: list[np.ndarray] = []
    labels: list[float] = []
    tasks: list[int] = []
    while len(rows) < n:
        x = rng.normal(size=n_features)
        x /= np.linalg.norm(x)
        t = int(rng.integers(n_tasks))
        score = float(W[t] @ x)
        if kind == "classification":
            if abs(score) < margin:
                continue
            y = 1.0 if score > 0 else -1.0
        else:
            y = score + noise * float(rng.normal())
        rows.append(x)
        labels.append(y)
        tasks.append(t)
    arrays = (np.array(rows), np.array(labels), np.array(tasks, dtype=np.int64))
    for a in arrays:
        a.flags.writeable = False
    return arrays
