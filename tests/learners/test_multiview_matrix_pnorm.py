"""The 2p-norm matrix Perceptron (cavallanti2010 Sec. 7; docs/algorithms.md Sec. 1.6) and baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.checks.multiview import related_views
from learners.multiview.matrix_pnorm import MAX_P, default_p, schatten_link


def _rounds(K: int, d: int, n: int, seed: int, flip: float = 0.05):
    rounds = related_views([d] * K, n=n, seed=seed)
    rng = np.random.default_rng(seed + 1)
    y = np.where(rng.random(n) < flip, -rounds.y, rounds.y)
    return rounds.views, y, rounds.task


def test_hand_worked_rounds():
    """d = 2, K = 2, p = 2 (columns of X are the views).

    1. X = I (x_1 = e1, x_2 = e2), y = -1: V = 0, score 0, SGN +1: mistake; V = -I, B = I.
    2. x_1 = x_2 = e1: C = V^T X = [[-1, -1], [0, 0]]; c(V) = (tr B^2)^{-1/2} = 1/sqrt 2,
       W = c V B = -I/sqrt 2, score tr(W^T X) = -1/sqrt 2. y = +1: mistake;
       V = [[0, 1], [0, -1]] (v_1 = 0, v_2 = (1, -1)), B = [[0, 0], [0, 2]].
    3. x_1 = x_2 = e2: c = (tr B^2)^{-1/2} = 1/2, W = V B / 2 = [[0, 1], [0, -1]],
       score = w_1 . e2 + w_2 . e2 = 0 - 1 = -1.
    """
    model = learners.make("matrix-pnorm", n_features=2, n_tasks=2, p=2)
    e1, e2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    assert model.score_and_learn_views([e1, e2], -1, 0) == 0.0
    np.testing.assert_array_equal(model.B_, np.eye(2))
    assert model.score_and_learn_views([e1, e1], 1, 0) == pytest.approx(
        -1 / math.sqrt(2), rel=1e-15
    )
    np.testing.assert_allclose(model.V_, [[0.0, 0.0], [1.0, -1.0]])  # rows are v_1, v_2
    np.testing.assert_allclose(model.B_, [[0.0, 0.0], [0.0, 2.0]])
    assert model.decision_views([e2, e2], 1) == pytest.approx(-1.0, rel=1e-15)
    np.testing.assert_allclose(model.task_weights(), [[0.0, 0.0], [1.0, -1.0]], atol=1e-15)


@pytest.mark.parametrize("bias", [False, True])
def test_p_one_is_the_perceptron_on_the_concatenated_vector(bias):
    views, y, tasks = _rounds(K=4, d=6, n=2000, seed=5, flip=0.1)
    matrix = learners.make("matrix-pnorm", n_features=6, n_tasks=4, p=1, append_bias=bias)
    concat = learners.make("multiview-concat", n_features=6, n_tasks=4, append_bias=bias)
    s_m, s_c = [], []
    for r in range(len(y)):
        rv = [v[r] for v in views]
        s_m.append(matrix.score_and_learn_views(rv, y[r], tasks[r]))
        s_c.append(concat.score_and_learn_views(rv, y[r], tasks[r]))
    np.testing.assert_array_equal(np.array(s_m) >= 0, np.array(s_c) >= 0)
    np.testing.assert_allclose(s_m, s_c, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(matrix.V_.reshape(-1), concat.w_, atol=1e-12)
    assert matrix.n_mistakes_ == concat.n_mistakes_ > 50


def test_gram_matrix_is_kept_equal_to_v_transpose_v():
    views, y, tasks = _rounds(K=5, d=7, n=1500, seed=6, flip=0.1)
    for labels in ("shared", "per_task"):
        model = learners.make("matrix-pnorm", n_features=7, n_tasks=5, p=3, labels=labels)
        model.score_and_learn_views_many(views, y, tasks)
        np.testing.assert_allclose(model.B_, model.V_ @ model.V_.T, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_link_is_the_gradient_of_half_the_squared_schatten_norm(p):
    """``W = c(V) V B^{p-1}`` equals a finite-difference gradient of ``(1/2)||V||_{s2p}^2``."""
    rng = np.random.default_rng(p)
    V = rng.normal(size=(6, 4))  # d x K as in the paper

    def half_sq(M: np.ndarray) -> float:
        s = np.linalg.svd(M, compute_uv=False)
        return 0.5 * float(np.sum(s ** (2 * p)) ** (1 / p))

    c, P = schatten_link(V.T @ V, p)
    W = c * V @ P
    h = 1e-6
    grad = np.zeros_like(V)
    for i in range(V.shape[0]):
        for j in range(V.shape[1]):
            E = np.zeros_like(V)
            E[i, j] = h
            grad[i, j] = (half_sq(V + E) - half_sq(V - E)) / (2 * h)
    np.testing.assert_allclose(W, grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    ("p", "labels"), [(1, "shared"), (3, "shared"), (2, "per_task"), (4, "per_task")]
)
def test_compiled_pass_equals_numpy_rounds(p, labels):
    views, y, tasks = _rounds(K=6, d=5, n=800, seed=7, flip=0.1)
    ref = learners.make("matrix-pnorm", n_features=5, n_tasks=6, p=p, labels=labels)
    fast = learners.make("matrix-pnorm", n_features=5, n_tasks=6, p=p, labels=labels)
    expected = [
        ref.score_and_learn_views([v[r] for v in views], y[r], tasks[r]) for r in range(800)
    ]
    got = fast.score_and_learn_views_many(views, y, tasks)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(fast.V_, ref.V_, atol=1e-12)
    np.testing.assert_allclose(fast.B_, ref.B_, rtol=1e-10, atol=1e-9)
    assert fast.n_mistakes_ == ref.n_mistakes_


@pytest.mark.parametrize(
    ("p", "labels", "normalize"),
    [(1, "shared", False), (2, "shared", True), (3, "shared", False), (2, "per_task", False)],
)
@pytest.mark.parametrize("sparse", [False, True])
def test_interleaved_batch_equals_the_rounds_of_zero_views(p, labels, normalize, sparse):
    """A batch of interleaved events (the O(K nnz) pass) gives the compiled rounds pass's
    scores and state on the rounds whose other views are zero, bit for bit."""
    K, d, n = 5, 7, 1500
    rng = np.random.default_rng(31)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.6)
    U = rng.normal(size=d) + 0.5 * rng.normal(size=(K, d))
    tasks = rng.integers(0, K, size=n)
    y = np.where(np.einsum("ij,ij->i", X, U[tasks]) >= 0, 1.0, -1.0)
    y[rng.random(n) < 0.1] *= -1
    params = {"p": p, "labels": labels, "l2_normalize": normalize}
    events = learners.make("matrix-pnorm", n_features=d, n_tasks=K, **params)
    rounds = learners.make("matrix-pnorm", n_features=d, n_tasks=K, **params)
    rows = sp.csr_matrix(X) if sparse else X
    got = np.concatenate(
        [
            events.score_and_learn_many(rows[a : a + 200], y[a : a + 200], tasks[a : a + 200])
            for a in range(0, n, 200)
        ]
    )
    views = [np.where((tasks == j)[:, None], X, 0.0) for j in range(K)]
    if sparse:  # the same input form: a row's unit-length scaling sums what the form holds
        views = [sp.csr_matrix(v) for v in views]
    expected = rounds.score_and_learn_views_many(views, y, tasks)
    assert np.array_equal(got, expected)
    assert np.array_equal(events.V_, rounds.V_)
    assert np.array_equal(events.B_, rounds.B_)
    assert events.n_mistakes_ == rounds.n_mistakes_ > 100


def test_default_p_is_logarithmic_in_min_d_k():
    assert default_p(10, 4) == 1  # ln 4 = 1.39
    assert default_p(50, 8) == 2  # ln 8 = 2.08
    assert default_p(5, 40) == 2  # ln 5 = 1.61
    assert default_p(100, 30) == 3  # ln 30 = 3.40
    assert default_p(1, 3) == 1
    assert learners.make("matrix-pnorm", n_features=50, n_tasks=8).p_ == 2


def test_per_task_labels_round_with_all_labels():
    """The [R] JMLR form: all K labels at once, each task scored with the same W."""
    views, y, tasks = _rounds(K=3, d=4, n=200, seed=8)
    model = learners.make("matrix-pnorm", n_features=4, n_tasks=3, p=2, labels="per_task")
    model.score_and_learn_views_many(views, y, tasks)
    rv = [v[0] for v in views]
    expected = [model.decision_views(rv, t) for t in range(3)]
    W = model.task_weights()
    np.testing.assert_allclose(expected, [W[t] @ rv[t] for t in range(3)], rtol=1e-12)
    labels = [-1.0 if s >= 0 else 1.0 for s in expected]  # every task wrong
    V_before = model.V_.copy()
    scores = model.score_and_learn_labels(rv, labels)
    np.testing.assert_allclose(scores, expected, rtol=1e-12)
    np.testing.assert_allclose(model.V_, V_before + np.array(labels)[:, None] * np.array(rv))
    with pytest.raises(ValueError, match="labels"):
        learners.make("matrix-pnorm", n_features=4, n_tasks=3).score_and_learn_labels(rv, labels)
    with pytest.raises(ValueError, match="3 labels"):
        model.score_and_learn_labels(rv, labels[:2])


def test_independent_baseline_sums_the_margins_of_per_view_perceptrons():
    views, y, tasks = _rounds(K=3, d=4, n=500, seed=9, flip=0.1)
    model = learners.make("multiview-independent", n_features=4, n_tasks=3)
    singles = [learners.make("ipl", n_features=4, n_tasks=1) for _ in range(3)]
    for r in range(len(y)):
        rv = [v[r] for v in views]
        expected = sum(s.decision_one(x, 0) for s, x in zip(singles, rv, strict=True))
        assert model.score_and_learn_views(rv, y[r], tasks[r]) == pytest.approx(expected, abs=1e-12)
        for s, x in zip(singles, rv, strict=True):
            s.learn_one(x, y[r], 0)


@pytest.mark.parametrize(
    "p", [65, 2**31, 2**63, 1e20, float("inf"), float("nan"), "x", 2.5, 0, True]
)
def test_an_exponent_outside_1_to_64_is_refused_at_construction(p):
    """A mistake costs p - 2 products of K x K matrices: p = 2**31 took about 21 s per
    mistake at K = 2 (days at K = 100), and a larger p did not fit the kernel's integer (an
    error after the model was created). Beyond MAX_P, non-integral, non-finite or
    non-numeric values are refused with the valid range named."""
    with pytest.raises(ValueError, match=r"must be an integer in \[1, 64\]"):
        learners.make("matrix-pnorm", n_features=3, n_tasks=2, p=p)


def test_the_largest_exponent_learns():
    model = learners.make("matrix-pnorm", n_features=3, n_tasks=2, p=MAX_P)
    assert model.p_ == MAX_P
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    scores = model.score_and_learn_many(X, np.where(X[:, 0] > 0, 1.0, -1.0), np.arange(50) % 2)
    assert np.isfinite(scores).all() and model.n_mistakes_ > 0
