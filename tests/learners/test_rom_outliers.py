"""Outlier-task reporting of the ROM learners: outlier_scores() and outlier_tasks()."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from learners.checks.streams import related_tasks


def flipped_task_stream(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Four related tasks (d = 10) where task 3's labels are negated: it contradicts the others."""
    s = related_tasks(n=4000, n_tasks=4, n_features=10, seed=seed)
    y = s.y.copy()
    y[s.task == 3] *= -1.0
    return s.X, y, s.task


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rda_flags_exactly_the_contradicting_task(seed: int) -> None:
    """With the defaults (gamma = 0.1, kappa = 1) the group lasso keeps q_i = 0 for the three
    related tasks and only the negated task keeps a non-zero outlier column."""
    X, y, task = flipped_task_stream(seed)
    model = learners.make("rom-rda", n_features=10, n_tasks=4)
    model.learn_many(X, y, task)
    scores = model.outlier_scores()  # type: ignore[attr-defined]
    assert model.outlier_tasks() == [3]  # type: ignore[attr-defined]
    assert np.all(scores[:3] == 0.0)
    assert scores[3] > 0.5


@pytest.mark.parametrize("name", ["rom-pgd", "rom-rda"])
def test_threshold_scores_and_shapes(name: str) -> None:
    X, y, task = flipped_task_stream(4)
    model = learners.make(name, n_features=10, n_tasks=4, gamma=0.05)
    model.learn_many(X[:1500], y[:1500], task[:1500])
    scores = model.outlier_scores()  # type: ignore[attr-defined]
    assert scores.shape == (4,)
    np.testing.assert_allclose(scores, np.linalg.norm(model.outlier_weights(), axis=1))  # type: ignore[attr-defined]
    assert model.outlier_tasks() == [k for k in range(4) if scores[k] > 0.0]  # type: ignore[attr-defined]
    cut = float(np.median(scores))
    raised = learners.make(name, n_features=10, n_tasks=4, gamma=0.05, outlier_threshold=cut)
    raised.learn_many(X[:1500], y[:1500], task[:1500])
    np.testing.assert_array_equal(raised.outlier_scores(), scores)  # type: ignore[attr-defined]
    assert raised.outlier_tasks() == [k for k in range(4) if scores[k] > cut]  # type: ignore[attr-defined]
    model.add_task()
    assert model.outlier_scores().shape == (5,)  # type: ignore[attr-defined]
    assert model.outlier_scores()[4] == 0.0  # type: ignore[attr-defined]
