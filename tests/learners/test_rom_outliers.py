"""Outlier-task reporting of the ROM learners: outlier_scores() and outlier_tasks()."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import learners
from learners.checks.streams import related_tasks
from learners.rom.base import relative_outliers


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
    model = learners.make(name, n_features=10, n_tasks=4, gamma=0.05, outlier_rule="absolute")
    model.learn_many(X[:1500], y[:1500], task[:1500])
    scores = model.outlier_scores()  # type: ignore[attr-defined]
    assert scores.shape == (4,)
    np.testing.assert_allclose(scores, np.linalg.norm(model.outlier_weights(), axis=1))  # type: ignore[attr-defined]
    assert model.outlier_tasks() == [k for k in range(4) if scores[k] > 0.0]  # type: ignore[attr-defined]
    cut = float(np.median(scores))
    raised = learners.make(
        name, n_features=10, n_tasks=4, gamma=0.05, outlier_rule="absolute", outlier_threshold=cut
    )
    raised.learn_many(X[:1500], y[:1500], task[:1500])
    np.testing.assert_array_equal(raised.outlier_scores(), scores)  # type: ignore[attr-defined]
    assert raised.outlier_tasks() == [k for k in range(4) if scores[k] > cut]  # type: ignore[attr-defined]
    model.add_task()
    assert model.outlier_scores().shape == (5,)  # type: ignore[attr-defined]
    assert model.outlier_scores()[4] == 0.0  # type: ignore[attr-defined]


def test_relative_rule_by_hand() -> None:
    """s = [0, 0.02, 0, 0.01, 0.12], factor 2: sum 0.15, so the others' means are
    m = (0.15 - s_i) / 4 = [0.0375, 0.0325, 0.0375, 0.035, 0.0075]. Task 0 and 2 fail
    s_i > 0; task 1: 0.02 < 2 * 0.0325 = 0.065; task 3: 0.01 < 0.07; task 4: 0.12 > 0.015.

    Near-equal scores [0.18, 0.18, 0.18, 0.18, 0.2] (sum 0.92): task 4's others' mean is
    0.18, so it is flagged for factor 1.1 (0.2 > 0.198) and not for 1.12 (0.2 < 0.2016);
    task 0's is 0.74 / 4 = 0.185 and 0.18 < 1.1 * 0.185."""
    assert relative_outliers(np.array([0.0, 0.02, 0.0, 0.01, 0.12]), 2.0) == [4]
    near = np.array([0.18, 0.18, 0.18, 0.18, 0.2])
    assert relative_outliers(near, 1.1) == [4]
    assert relative_outliers(near, 1.12) == []
    # One non-zero column among zeros: the others' mean is 0, so it is flagged.
    assert relative_outliers(np.array([0.0, 0.0, 0.001, 0.0]), 5.0) == [2]
    # The absolute threshold still applies: 0.5 is 50 times the others' mean but not > 0.6.
    assert relative_outliers(np.array([0.5, 0.01, 0.01]), 2.0, threshold=0.6) == []
    assert relative_outliers(np.array([0.5, 0.01, 0.01]), 2.0) == [0]
    # One task: no others, the rule is the absolute one.
    assert relative_outliers(np.array([0.3]), 2.0) == [0]
    assert relative_outliers(np.array([0.0]), 2.0) == []
    assert relative_outliers(np.zeros(0), 2.0) == []


score_vectors = arrays(
    np.float64, st.integers(1, 8), elements=st.floats(0.0, 1e3, allow_nan=False, width=32)
)


@settings(max_examples=200, deadline=None)
@given(
    s=score_vectors,
    factor=st.floats(1.0, 10.0),
    threshold=st.floats(0.0, 10.0),
    exponent=st.integers(-20, 20),
    shift=st.integers(0, 7),
)
def test_relative_rule_properties(
    s: np.ndarray, factor: float, threshold: float, exponent: int, shift: int
) -> None:
    """Flagged tasks pass the absolute test; with factor >= 1 a flagged task is above the
    others' mean and equal scores are never flagged; the rule is invariant to scaling the
    scores and the threshold by a power of two (exact in floating point) and equivariant
    under a rotation of the tasks."""
    flagged = relative_outliers(s, factor, threshold)
    assert all(s[k] > threshold for k in flagged)
    K = len(s)
    for k in flagged:
        assert K == 1 or s[k] > (s.sum() - s[k]) / (K - 1) - 1e-9 * s.sum()
    assert relative_outliers(np.full(K, s[0]), factor, threshold) == (
        [0] if K == 1 and s[0] > threshold else []
    )
    scale = 2.0**exponent
    assert relative_outliers(s * scale, factor, threshold * scale) == flagged
    order = np.roll(np.arange(K), shift)
    rotated = relative_outliers(s[order], factor, threshold)
    assert sorted(int(order[k]) for k in rotated) == flagged


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_relative_rule_singles_out_the_contradicting_task_without_shrinkage(seed: int) -> None:
    """With gamma = 0 every q_i is non-zero, so the paper's exact-zero test flags all four
    tasks; the negated task's ||q_i|| is about 1.6 times the others' mean (measured: 3.0
    against 1.8-1.9), so the relative rule with factor 1.3 flags only it."""
    X, y, task = flipped_task_stream(seed)
    absolute = learners.make(
        "rom-rda", n_features=10, n_tasks=4, gamma=0.0, outlier_rule="absolute"
    )
    relative = learners.make(
        "rom-rda", n_features=10, n_tasks=4, gamma=0.0, outlier_rule="relative", outlier_factor=1.3
    )
    for model in (absolute, relative):
        model.learn_many(X, y, task)
    assert absolute.outlier_tasks() == [0, 1, 2, 3]  # type: ignore[attr-defined]
    assert relative.outlier_tasks() == [3]  # type: ignore[attr-defined]
    scores = relative.outlier_scores()  # type: ignore[attr-defined]
    assert relative.outlier_tasks() == relative_outliers(scores, 1.3)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["rom-pgd", "rom-rda"])
def test_outlier_rule_option_is_validated(name: str) -> None:
    with pytest.raises(ValueError):
        learners.make(name, n_features=3, n_tasks=2, outlier_rule="zscore")
    with pytest.raises(ValueError):
        learners.make(name, n_features=3, n_tasks=2, outlier_factor=0.0)
    model = learners.make(name, n_features=3, n_tasks=2)
    assert model.hyper["outlier_rule"] == "relative"
