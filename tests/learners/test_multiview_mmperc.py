"""MMPERC (cavallanti2010 Sec. 6; docs/algorithms.md Sec. 1.5): golden rounds and the paper's facts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.checks.multiview import related_views
from learners.multiview.mmperc import AUTO_PRIMAL_MAX_DIM, coregularizer_vector


def _unit_views(rng: np.random.Generator, dims: list[int]) -> list[np.ndarray]:
    out = []
    for d in dims:
        x = rng.normal(size=d)
        out.append(x / np.linalg.norm(x))
    return out


def _noisy_rounds(dims: list[int], n: int, seed: int, flip: float = 0.1):
    rounds = related_views(dims, n=n, seed=seed)
    rng = np.random.default_rng(seed + 100)
    y = np.where(rng.random(n) < flip, -rounds.y, rounds.y)
    return rounds.views, y, rounds.task


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_hand_worked_rounds(form):
    """K = 2, d_1 = d_2 = 1, b = 1 (the paper's example value).

    1. views (1, 1), task 0, y = -1: v = 0 so the margin is 0, SGN gives +1: mistake.
       z = sqrt(2)((1, 0) - (1, 1)/2) = (1, -1)/sqrt(2); v = (-1, 0);
       A = I + z z^T = [[1.5, -0.5], [-0.5, 1.5]], A^{-1} = [[0.75, 0.25], [0.25, 0.75]].
    2. views (1, 1), task 1, y = -1: z = (-1, 1)/sqrt(2), A_t = A + z z^T = [[2, -1], [-1, 2]],
       A_t^{-1} = [[2, 1], [1, 2]]/3, margin = v^T A_t^{-1} (0, 1) = -1/3: correct, A is kept.
       Task 1 learned from task 0's mistake (an independent Perceptron would say +1).
    3. views (-1, 1), task 1, y = -1: z = sqrt(2)((0, 1) - (-1, 1)/2) = (1, 1)/sqrt(2),
       A_t = A + z z^T = 2 I, margin = (-1, 0) . (0, 1/2) = 0, SGN +1: mistake;
       v = (-1, -1), A^{-1} = I/2.
    """
    model = learners.make("mmperc", n_features=1, n_tasks=2, b=1.0, form=form)
    assert model.score_and_learn_views([[1.0], [1.0]], -1, 0) == 0.0
    assert model.score_and_learn_views([[1.0], [1.0]], -1, 1) == pytest.approx(-1 / 3, abs=1e-15)
    assert model.n_mistakes_ == 1
    assert model.score_and_learn_views([[-1.0], [1.0]], -1, 1) == pytest.approx(0.0, abs=1e-15)
    state = model.state_dict()
    np.testing.assert_allclose(state["state.v_"], [-1.0, -1.0])
    if form == "primal":
        np.testing.assert_allclose(state["state.Ainv_"], np.eye(2) / 2, atol=1e-15)
    else:
        Z = np.asarray(state["state.Z_"])
        np.testing.assert_allclose(np.eye(2) + Z.T @ Z, 2 * np.eye(2), atol=1e-15)
    # 4. views (1, 0), task 0: z = sqrt(2)((1, 0) - (1, 0)/2) = (1/sqrt 2, 0),
    #    A_t = 2I + diag(1/2, 0) = diag(2.5, 2), margin = (-1, -1) . (1/2.5, 0) = -0.4.
    assert model.decision_views([[1.0], [0.0]], 0) == pytest.approx(-0.4, abs=1e-15)


@pytest.mark.parametrize(("b", "dims"), [(1.0, [4, 4, 4]), (0.3, [3, 6, 2, 5]), (5.0, [8, 1])])
def test_primal_equals_dual_on_random_streams(b, dims):
    views, y, tasks = _noisy_rounds(dims, 800, seed=int(10 * b))
    primal = learners.make("mmperc", n_features=1, n_tasks=len(dims), task_dims=dims, b=b)
    dual = learners.make(
        "mmperc", n_features=1, n_tasks=len(dims), task_dims=dims, b=b, form="dual"
    )
    assert primal.form_ == "primal"
    sp, sd = [], []
    for r in range(len(y)):
        rv = [v[r] for v in views]
        sp.append(primal.score_and_learn_views(rv, y[r], tasks[r]))
        sd.append(dual.score_and_learn_views(rv, y[r], tasks[r]))
    np.testing.assert_array_equal(np.array(sp) >= 0, np.array(sd) >= 0)
    np.testing.assert_allclose(sp, sd, rtol=1e-9, atol=1e-9)
    assert primal.n_mistakes_ == dual.n_mistakes_ > 20
    Z = dual.state_dict()["state.Z_"]
    A = np.eye(sum(dims)) + Z.T @ Z
    np.testing.assert_allclose(np.linalg.inv(A), primal.Ainv_, atol=1e-9)
    np.testing.assert_allclose(primal.v_, dual.v_, atol=1e-12)


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_compiled_pass_equals_numpy_rounds(form):
    dims = [5, 3, 7]
    views, y, tasks = _noisy_rounds(dims, 600, seed=3)
    ref = learners.make("mmperc", n_features=1, n_tasks=3, task_dims=dims, form=form)
    fast = learners.make("mmperc", n_features=1, n_tasks=3, task_dims=dims, form=form)
    expected = [
        ref.score_and_learn_views([v[r] for v in views], y[r], tasks[r]) for r in range(600)
    ]
    got = fast.score_and_learn_views_many(views, y, tasks)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
    assert fast.n_mistakes_ == ref.n_mistakes_
    for key, value in ref.state_dict().items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            np.testing.assert_allclose(fast.state_dict()[key], value, atol=1e-10, err_msg=key)


@pytest.mark.parametrize(("K", "b"), [(2, 1.0), (3, 0.5), (5, 2.0), (8, 1.0)])
def test_coregularizer_facts_for_orthonormal_blocks(K, b):
    """``M_t phi_t = 0`` and ``phi_i^T (I + M_t)^{-1} phi_i = (K(b+1) - b)/(bK(K-1) + K)``."""
    rng = np.random.default_rng(K)
    dims = [int(d) for d in rng.integers(1, 6, size=K)]
    phi = np.concatenate(_unit_views(rng, dims))
    offsets = np.concatenate(([0], np.cumsum(dims)))
    for i in range(K):
        block = slice(int(offsets[i]), int(offsets[i + 1]))
        z = coregularizer_vector(phi, block, K, b)
        M = np.outer(z, z)
        np.testing.assert_allclose(M @ phi, 0.0, atol=1e-12)
        phi_i = np.zeros_like(phi)
        phi_i[block] = phi[block]
        quad = phi_i @ np.linalg.solve(np.eye(phi.shape[0]) + M, phi_i)
        assert quad == pytest.approx((K * (b + 1) - b) / (b * K * (K - 1) + K), rel=1e-12)
        # the quadratic form of M_t is the margin deviation of Eq. (13)
        u = rng.normal(size=phi.shape[0])
        margins = [
            u[offsets[j] : offsets[j + 1]] @ phi[offsets[j] : offsets[j + 1]] for j in range(K)
        ]
        deviation = b * K * (margins[i] - sum(margins) / K) ** 2
        assert u @ M @ u == pytest.approx(deviation, rel=1e-10)


def test_small_b_approaches_independent_perceptrons():
    """b = 0 is exactly K independent Perceptrons; as b -> 0 MMPERC's margins converge to theirs.

    Every task is first primed by an interleaved event (the other views zero), which is a
    mistake for both learners (score exactly 0, label -1): without it a task with no
    mistake yet scores exactly 0 alone but O(b) with the coupling, and the runs part at
    that tie.
    """
    dims = [4, 6, 3]
    views, y, tasks = _noisy_rounds(dims, 1500, seed=9)

    def primed(name: str, **params: object) -> learners.Learner:
        model = learners.make(name, n_features=1, n_tasks=3, task_dims=dims, **params)
        for j, d in enumerate(dims):
            model.learn_one(np.full(d, 1.0 / np.sqrt(d)), -1, j)
        return model

    indep = primed("multiview-independent", labels="per_task")
    s_ind = indep.score_and_learn_views_many(views, y, tasks)
    exact = primed("mmperc", b=0.0)
    np.testing.assert_allclose(exact.score_and_learn_views_many(views, y, tasks), s_ind, atol=1e-12)
    gaps = []
    for b in (1e-6, 1e-8, 1e-10):  # (larger b part from the independent run at near-ties)
        model = primed("mmperc", b=b)
        assert model.n_mistakes_ == 3
        scores = model.score_and_learn_views_many(views, y, tasks)
        np.testing.assert_array_equal(scores >= 0, s_ind >= 0)
        np.testing.assert_array_equal(model.v_, indep.w_)  # the same mistakes, the same sums
        gaps.append(float(np.max(np.abs(scores - s_ind))))
    # the gap shrinks like b
    assert 50 * gaps[1] < gaps[0] < 1e-3
    assert 50 * gaps[2] < gaps[1]


def test_coupling_helps_when_margins_are_shared():
    """All K views carry the same label with related margins: MMPERC beats independent ones."""
    dims = [6, 9, 4, 7, 5]
    rounds = related_views(dims, n=3000, seed=4)
    mm = learners.make("mmperc", n_features=1, n_tasks=5, task_dims=dims, b=1.0)
    ind = learners.make(
        "multiview-independent", n_features=1, n_tasks=5, task_dims=dims, labels="per_task"
    )
    m_mm = np.sum(
        (mm.score_and_learn_views_many(rounds.views, rounds.y, rounds.task) >= 0) != (rounds.y > 0)
    )
    m_ind = np.sum(
        (ind.score_and_learn_views_many(rounds.views, rounds.y, rounds.task) >= 0) != (rounds.y > 0)
    )
    assert m_mm < m_ind


def test_form_auto_follows_the_concatenated_dimension():
    small = learners.make("mmperc", n_features=AUTO_PRIMAL_MAX_DIM // 4, n_tasks=4)
    large = learners.make("mmperc", n_features=AUTO_PRIMAL_MAX_DIM // 4 + 1, n_tasks=4)
    assert (small.form_, large.form_) == ("primal", "dual")
    assert large.state_dict()["state.Ainv_"].shape == (0, 0)


def test_task_dims_validation():
    with pytest.raises(ValueError, match="task_dims"):
        learners.make("mmperc", n_features=3, n_tasks=2, task_dims=[1, 2, 3])
    with pytest.raises(ValueError, match="task_dims"):
        learners.make("mmperc", n_features=3, n_tasks=2, task_dims=[0, 2])
    model = learners.make("mmperc", n_features=3, n_tasks=3, task_dims=[5])
    assert model.view_dims == [5, 3, 3]
    assert model.total_dim == 11
    model.add_task()
    assert model.view_dims == [5, 3, 3, 3]
    with pytest.raises(ValueError, match="dimension n_features"):
        model.learn_many(np.ones((2, 3)), [1, -1], [0, 1])
    model.learn_many(np.ones((2, 3)), [1, -1], [1, 3])


def test_interleaved_events_use_the_task_dimension():
    model = learners.make("mmperc", n_features=2, n_tasks=2, task_dims=[4])
    model.learn_one(np.ones(4), -1, 0)
    with pytest.raises(ValueError, match="dimension"):
        model.learn_one(np.ones(2), -1, 0)
    assert model.predict_one(np.ones(4), 0) == -1
    assert math.isfinite(model.decision_one(np.ones(2), 1))


def test_batches_accept_sparse_views_and_one_task_index():
    dims = [4, 6]
    views, y, _ = _noisy_rounds(dims, 300, seed=12)
    for v in views:
        v[:, 0] = 0.0
    dense = learners.make("mmperc", n_features=1, n_tasks=2, task_dims=dims)
    sparse = learners.make("mmperc", n_features=1, n_tasks=2, task_dims=dims)
    s_dense = dense.score_and_learn_views_many(views, y, 1)
    s_sparse = sparse.score_and_learn_views_many([sp.csr_matrix(v) for v in views], y, 1)
    np.testing.assert_array_equal(s_dense, s_sparse)
    assert dense.n_mistakes_ == sparse.n_mistakes_ > 0


@pytest.mark.parametrize("scale", [1e9, 1e12, 3e38])
@pytest.mark.parametrize("b", [1.0, 2.0])
def test_dual_rows_of_huge_values_keep_sigma_at_one(scale, b):
    """The dual form's ``sigma >= 1`` (a Schur complement of ``I + Z^T Z``); on rows of
    values near 1e9 and more rounding took it to 0 and the margin raised
    ZeroDivisionError from the second round on. Kept at 1: the margins stay finite in
    the numpy rounds (per-event calls) and the compiled pass (batches) alike, which
    agree, and a later ordinary round is learned."""
    x = np.array([scale, 1.0])
    X = np.array([x, x, -x, [0.0, 1.0]])
    y, tasks = np.array([-1.0, 1.0, -1.0, 1.0]), np.array([0, 0, 1, 1])
    rounds = learners.make("mmperc", n_features=2, n_tasks=2, seed=0, form="dual", b=b)
    scores = [rounds.score_and_learn_one(X[r], y[r], tasks[r]) for r in range(4)]
    batch = learners.make("mmperc", n_features=2, n_tasks=2, seed=0, form="dual", b=b)
    assert np.isfinite(scores).all()
    np.testing.assert_allclose(batch.score_and_learn_many(X, y, tasks), scores, rtol=1e-9)
    for m in (rounds, batch):
        assert np.isfinite(m.decision_one(x, 0)) and np.isfinite(m.decision_one(X[3], 1))
