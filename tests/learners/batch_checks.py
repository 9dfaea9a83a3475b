"""Helpers of the compiled-pass tests of the active learners: a stream cut into random
blocks, learned block by block, and state dicts compared to the reference's; a stream of
rows of widely varying scale with some zero entries, for the single-event entries."""

from __future__ import annotations

from typing import Any

import numpy as np

import learners
from learners.active.rounds import ActiveLearner


def random_blocks(n: int, largest: int, seed: int) -> list[tuple[int, int]]:
    """Consecutive blocks of sizes 1 to ``largest`` covering ``n`` rows."""
    rng = np.random.default_rng(seed)
    bounds, start = [], 0
    while start < n:
        end = min(n, start + int(rng.integers(1, largest + 1)))
        bounds.append((start, end))
        start = end
    return bounds


def learn_in_blocks(
    model: ActiveLearner,
    X: Any,
    y: np.ndarray,
    tasks: np.ndarray,
    active: bool,
    bounds: list[tuple[int, int]],
) -> tuple[np.ndarray, np.ndarray]:
    """Scores and queries of ``model`` over the blocks: ``query_and_learn_many`` when
    ``active``, else ``score_and_learn_many`` (every row then counts as asked)."""
    n = bounds[-1][1]
    scores, asked = np.empty(n), np.ones(n, dtype=bool)
    for a, e in bounds:
        if active:
            scores[a:e], asked[a:e] = model.query_and_learn_many(X[a:e], y[a:e], tasks[a:e])
        else:
            scores[a:e] = model.score_and_learn_many(X[a:e], y[a:e], tasks[a:e])
    return scores, asked


def assert_same_learner(fast: learners.Learner, ref: learners.Learner) -> None:
    """Equal state dicts: float arrays to 1e-12 relative, everything else (generator,
    counts, a base's mistake counts) exactly."""
    a, b = fast.state_dict(), ref.state_dict()
    assert a.keys() == b.keys()
    for key, value in b.items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            scale = max(1.0, float(np.abs(value).max(initial=0.0)))
            got = np.asarray(a[key])
            np.testing.assert_allclose(got, value, rtol=1e-12, atol=1e-12 * scale, err_msg=key)
        elif isinstance(value, np.ndarray):
            np.testing.assert_array_equal(a[key], value, err_msg=key)
        else:
            assert a[key] == value, key


def per_event(
    model: learners.Learner, X: np.ndarray, y: np.ndarray, tasks: np.ndarray, active: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The public per-event calls: ``decision_one`` (and ``predict_one``), then
    ``query_one`` when active, ``learn_one`` when asked; labelled rounds alternate
    ``score_and_learn_one`` with ``decision_one`` + ``learn_one``."""
    scores, asked = np.empty(len(y)), np.ones(len(y), dtype=bool)
    for i in range(len(y)):
        x, t, label = X[i], int(tasks[i]), float(y[i])
        if not active and i % 2:
            scores[i] = model.score_and_learn_one(x, label, t)
            continue
        scores[i] = model.decision_one(x, t)
        assert model.predict_one(x, t) == (1 if scores[i] >= 0.0 else -1)
        if active:
            asked[i] = model.query_one(x, t)
        if asked[i]:
            model.learn_one(x, label, t)
    return scores, asked


def scaled_rows(
    n: int, d: int, k: int, zeros: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` rows of ``d`` features, each row's scale log-normal, a share ``zeros`` of the
    entries set to 0; labels from the first two features with noise; tasks of ``k``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.lognormal(0.0, 1.0, size=(n, 1))
    X[rng.random(X.shape) < zeros] = 0.0
    y = np.where(X[:, 0] - X[:, 1] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y, rng.integers(0, k, n)


def dense_row_forms(X: np.ndarray) -> list[tuple[str, list[np.ndarray]]]:
    """The rows of ``X`` in the dense forms a per-event call may get, each labelled: as
    float64 arrays, read-only and strided (the compiled entries take the last two as a
    float64 copy)."""
    read_only = X.copy()
    read_only.flags.writeable = False
    strided = np.asfortranarray(X)
    return [
        ("float64", list(X)),
        ("read-only", list(read_only)),
        ("strided", [strided[i] for i in range(X.shape[0])]),
    ]
