"""zhang2018's outlier part on the adaptive learners (docs/algorithms.md Sec. 11.7): the
group soft-thresholding by hand, kernel against reference, norms, detection, task growth."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.checks.kernels import reference_of
from learners.checks.streams import related_tasks

RAW = {"append_bias": False, "l2_normalize": False}


@pytest.mark.parametrize(("gamma", "q"), [(0.1, 0.15), (0.3, 0.0)])
def test_first_hinge_step_with_an_outlier_part_by_hand(gamma: float, q: float) -> None:
    """d = 1, b = 0, eta = 1, x = 2, y = +1. s = 2, N = 1, t = 1 (scale 1); g = -1 so
    G_0 = G_k = 4 and both rates are 1 / (2 * 2) = 0.25; h = 4 * 0.25 (shared) + 4 * 0.25
    (outlier) = 2, the hinge step dz = min(h, 1 - 0) = 1, a = dz / h = 0.5. Shared
    u_0 = 0.5 * 0.25 * 2 = 0.25; q_hat = 0.25. Prox with eta gamma: gamma = 0.1 leaves
    q = 0.25 (1 - 0.1 / 0.25) = 0.15; gamma = 0.3 >= 0.25 zeroes it. Score after:
    2 (0.25 + q)."""
    model = learners.make(
        "adaptive-hinge", n_features=1, n_tasks=2, eta=1.0, b=0.0, outlier_gamma=gamma, **RAW
    )
    x = np.array([2.0])
    assert model.score_and_learn_one(x, 1.0, 0) == 0.0
    np.testing.assert_allclose(model.U0_[0], [0.25], rtol=1e-15)
    np.testing.assert_allclose(model.Qs_[0, 0] * model.Q_[0, 0], [q], rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(model.outlier_scores(), [q, 0.0], rtol=1e-14, atol=1e-16)
    assert model.decision_one(x, 0) == pytest.approx(2 * (0.25 + q), rel=1e-14)
    assert model.decision_one(x, 1) == pytest.approx(0.5, rel=1e-14)


def _sparse_stream(seed: int) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Sparse rows whose feature scales grow over time (the normaliser rescales)."""
    rng = np.random.default_rng(seed)
    n, d, K = 600, 12, 4
    X = sp.random(n, d, density=0.4, random_state=seed, format="csr")
    X.data = rng.normal(size=X.data.size) * np.repeat(1 + np.arange(n) / 100, np.diff(X.indptr))
    tasks = rng.integers(0, K, n)
    w = rng.normal(size=d)
    y = np.where(X @ w * np.where(tasks == 3, -1, 1) >= 0, 1.0, -1.0)
    return X, y, tasks


@pytest.mark.parametrize("name", ["adaptive-logistic", "adaptive-hinge"])
def test_kernel_equals_the_reference_with_outlier_parts(name: str) -> None:
    X, y, tasks = _sparse_stream(3)
    params = {"outlier_gamma": 0.02, "b": 0.5, "eta": 1.0}
    batch = learners.make(name, n_features=12, n_tasks=4, **params)
    rows = reference_of(batch)  # the numpy reference, one event at a time
    scores = batch.score_and_learn_many(X, y, tasks)
    dense = X.toarray()
    ref = [rows.score_and_learn_one(x, lab, t) for x, lab, t in zip(dense, y, tasks.tolist())]
    np.testing.assert_allclose(scores, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        batch.Qs_[:, :, None] * batch.Q_, rows.Qs_[:, :, None] * rows.Q_, atol=1e-12
    )
    np.testing.assert_allclose(batch.U_, rows.U_, atol=1e-12)
    np.testing.assert_allclose(batch.outlier_scores(), rows.outlier_scores(), rtol=1e-9, atol=1e-12)
    # the kept norm is the norm of the outlier part
    q = batch.Qs_[0][:, None] * batch.Q_[0]
    np.testing.assert_allclose(batch.outlier_scores(), np.linalg.norm(q, axis=1), rtol=1e-9)
    assert batch.outlier_scores().max() > 0.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_contradicting_task_is_the_one_flagged(seed: int) -> None:
    """Four related tasks, task 3's labels negated: with outlier_gamma = 0.01 and b = 0.5 the
    per-task part cannot absorb the flip and task 3's outlier part stands out (measured
    ||q_3|| 3.3-4.1 against at most 0.41 for the others); without it nothing is flagged."""
    s = related_tasks(n=4000, n_tasks=4, n_features=10, seed=seed)
    y = s.y.copy()
    y[s.task == 3] *= -1.0
    model = learners.make("adaptive-logistic", n_features=10, n_tasks=4, outlier_gamma=0.01, b=0.5)
    model.learn_many(s.X, y, s.task)
    scores = model.outlier_scores()
    assert model.outlier_tasks() == [3]
    assert scores[3] > 5 * np.delete(scores, 3).max()
    plain = learners.make("adaptive-logistic", n_features=10, n_tasks=4, b=0.5)
    plain.learn_many(s.X, y, s.task)
    np.testing.assert_array_equal(plain.outlier_scores(), np.zeros(4))
    assert plain.outlier_tasks() == []
    assert plain.Q_.shape == (1, 0, 0)


def test_a_new_task_enters_without_an_outlier_part() -> None:
    X, y, tasks = _sparse_stream(5)
    model = learners.make("adaptive-hinge", n_features=12, n_tasks=4, outlier_gamma=0.02)
    model.learn_many(X, y, tasks)
    assert model.add_task() == 4
    assert model.Q_.shape == (1, 5, 13)
    assert model.outlier_scores()[4] == 0.0
    model.learn_many(X[:50], y[:50], np.full(50, 4))
    assert model.outlier_scores().shape == (5,)
