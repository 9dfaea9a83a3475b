"""Golden tests of the multitask Perceptron family: ipl, stl, cmtl (saha2011 Eq. 2.2)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.perceptron.interaction import (
    b_family_inverse,
    b_family_matrix,
    check_spd,
    graph_matrix,
    spd_inverse,
)
from tests.learners.reference import multitask_perceptron, noisy_stream, perceptron, run

# ---------------------------------------------------------------- hand-worked cmtl
#: (x, task, y, score before learning, W after the step), K = 3, b = K = 3.
HAND_STEPS = [
    ((1.0, 0.0), 0, -1, 0.0, [[-0.5, 0.0], [-0.25, 0.0], [-0.25, 0.0]]),
    ((0.0, 1.0), 1, 1, 0.0, [[-0.5, 0.0], [-0.25, 0.0], [-0.25, 0.0]]),
    ((1.0, 1.0), 2, 1, -0.25, [[-0.25, 0.25], [0.0, 0.25], [0.25, 0.5]]),
    ((2.0, -1.0), 1, -1, -0.25, [[-0.25, 0.25], [0.0, 0.25], [0.25, 0.5]]),
    ((1.0, -1.0), 0, 1, -0.5, [[0.25, -0.25], [0.25, 0.0], [0.5, 0.25]]),
    ((0.0, 1.0), 2, -1, 0.25, [[0.25, -0.5], [0.25, -0.25], [0.5, -0.25]]),
]


@pytest.mark.parametrize(
    "params",
    [{}, {"b": 3.0}, {"A": 4 * np.eye(3) - np.ones((3, 3))}],
    ids=["b-default", "b=3", "dense-A"],
)
def test_cmtl_hand_worked_three_tasks(params):
    """saha2011 Eq. (2.2) with ``A^{-1} = (I + 11^T)/(K+1)`` for K = 3: own task 1/2, others 1/4.

    On a mistake of task i every task j moves by ``y (A^{-1})_{j,i} x``:

    1. x = (1, 0), task 0, y = -1: score 0 predicts +1, mistake.
       w0 = -(1/2)(1, 0) = (-.5, 0); w1 = w2 = -(1/4)(1, 0) = (-.25, 0).
    2. x = (0, 1), task 1, y = +1: score w1.x = 0 predicts +1, correct; no change.
    3. x = (1, 1), task 2, y = +1: score w2.x = -.25, mistake.
       w0 += (1/4)(1, 1) -> (-.25, .25); w1 += (1/4)(1, 1) -> (0, .25); w2 += (1/2)(1, 1) -> (.25, .5).
    4. x = (2, -1), task 1, y = -1: score 0 - .25 = -.25 predicts -1, correct.
    5. x = (1, -1), task 0, y = +1: score -.25 - .25 = -.5, mistake.
       w0 += (1/2)(1, -1) -> (.25, -.25); w1, w2 += (1/4)(1, -1) -> (.25, 0), (.5, .25).
    6. x = (0, 1), task 2, y = -1: score .25 predicts +1, mistake.
       w0, w1 -= (1/4)(0, 1) -> (.25, -.5), (.25, -.25); w2 -= (1/2)(0, 1) -> (.5, -.25).

    The default (b = K), the explicit b = 3 (both the O(nnz) shared + per-task form)
    and the same matrix ``A = 4I - 11^T`` given densely agree on every step.
    """
    model = learners.make("cmtl", n_features=2, n_tasks=3, **params)
    np.testing.assert_allclose(model.relation_matrix(), 4 * np.eye(3) - 1, atol=1e-14)
    for x, task, label, score, W in HAND_STEPS:
        assert model.decision_one(np.array(x), task) == pytest.approx(score, abs=1e-15)
        model.learn_one(np.array(x), label, task)
        np.testing.assert_allclose(model.task_weights(), W, atol=1e-15)
    assert model.state_dict()["state.n_mistakes_"] == 4


# ---------------------------------------------------------------- reductions
def test_cmtl_with_identity_is_ipl():
    """A = I (b = 0, or A given as I): each task updates alone, as K independent Perceptrons."""
    K, d = 4, 6
    X, y, tasks = noisy_stream(4000, K, d, seed=41)
    ipl = learners.make("ipl", n_features=d, n_tasks=K)
    expected = run(ipl, X, y, tasks)
    for params in ({"b": 0.0}, {"A": np.eye(K)}):
        cmtl = learners.make("cmtl", n_features=d, n_tasks=K, **params)
        np.testing.assert_array_equal(run(cmtl, X, y, tasks), expected)
        np.testing.assert_array_equal(cmtl.task_weights(), ipl.task_weights())
    # ... and ipl is one plain Perceptron per task (to rounding: the compiled kernels
    # sum inner products in another order than numpy's dot, learners.kernels)
    for k in range(K):
        scores, w = perceptron(X[tasks == k], y[tasks == k])
        np.testing.assert_allclose(expected[tasks == k], scores, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(ipl.task_weights()[k], w, rtol=1e-12, atol=1e-14)


def test_stl_is_one_perceptron_on_pooled_data():
    """stl (and pt-global) ignore the task: one Perceptron over the whole stream."""
    K, d = 4, 6
    X, y, tasks = noisy_stream(4000, K, d, seed=42)
    scores, w = perceptron(X, y)
    for name in ("stl", "pt-global"):
        model = learners.make(name, n_features=d, n_tasks=K)
        np.testing.assert_allclose(run(model, X, y, tasks), scores, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(model.task_weights(), np.tile(w, (K, 1)), rtol=1e-12)


def test_b_to_infinity_gives_every_task_the_same_update():
    """b -> inf: A_b^{-1} -> 11^T/K, all tasks receive x/K (algorithms.md Sec. 10)."""
    X, y, tasks = noisy_stream(500, 3, 4, seed=43)
    model = learners.make("cmtl", n_features=4, n_tasks=3, b=1e12)
    run(model, X, y, tasks)
    W = model.task_weights()
    np.testing.assert_allclose(W, np.tile(W.mean(axis=0), (3, 1)), rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- fast vs slow
@pytest.mark.parametrize("b", [None, 0.7, 5.0])
def test_b_family_fast_path_equals_dense_inverse_path(b):
    """The O(nnz) shared + per-task form equals cmtl given the same A densely, to 1e-12.

    10,000 events, K = 5, d = 8, 10% flipped labels (so mistakes go on all along).
    """
    K, d = 5, 8
    X, y, tasks = noisy_stream(10_000, K, d, seed=44)
    fast = learners.make("cmtl", n_features=d, n_tasks=K, b=b)
    A = b_family_matrix(K, K if b is None else b)
    dense = learners.make("cmtl", n_features=d, n_tasks=K, A=A)
    s_fast, s_dense = run(fast, X, y, tasks), run(dense, X, y, tasks)
    np.testing.assert_array_equal(s_fast >= 0, s_dense >= 0)
    np.testing.assert_allclose(s_fast, s_dense, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fast.task_weights(), dense.task_weights(), rtol=1e-12, atol=1e-12)
    n_mistakes = fast.state_dict()["state.n_mistakes_"]
    assert n_mistakes == dense.state_dict()["state.n_mistakes_"] > 1000


GRAPH = np.array([[0, 1, 0, 3], [1, 0, 2, 0], [0, 2, 0, 1], [3, 0, 1, 0]], dtype=float)
GENERAL_A = np.array(
    [[2.0, 0.3, -0.4, 0.1], [0.3, 1.5, 0.2, 0.0], [-0.4, 0.2, 1.8, -0.3], [0.1, 0.0, -0.3, 1.2]]
)


@pytest.mark.parametrize(
    ("params", "A"),
    [
        ({}, b_family_matrix(4, 4)),
        ({"graph": GRAPH, "graph_scale": 0.5}, graph_matrix(GRAPH, 0.5)),
        ({"A": GENERAL_A}, GENERAL_A),
    ],
    ids=["b-family", "graph", "general-A"],
)
def test_cmtl_matches_the_kronecker_reference(params, A):
    """Every form of A against ``w += y (inv(A) (x) I_d) phi`` in R^{Kd} (saha2011 Eq. 2.2)."""
    K, d = 4, 5
    X, y, tasks = noisy_stream(1500, K, d, seed=45)
    model = learners.make("cmtl", n_features=d, n_tasks=K, **params)
    scores = run(model, X, y, tasks)
    ref_scores, ref_W = multitask_perceptron(X, y, tasks, A)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model.task_weights(), ref_W, rtol=1e-10, atol=1e-10)


PRE = {"append_bias": True, "l2_normalize": True}


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("ipl", {}),
        ("stl", PRE),
        ("cmtl", {}),
        ("cmtl", {"graph": GRAPH, **PRE}),
    ],
    ids=["ipl", "stl-preprocessed", "cmtl-b-family", "cmtl-graph-preprocessed"],
)
def test_batch_path_makes_the_same_mistakes_as_the_row_loop(name, params):
    """score_and_learn_many (Gram-matrix kernel) against decision_one + learn_one, 10,000 rows
    in batches of random sizes 1..600."""
    K, d = 4, 8
    X, y, tasks = noisy_stream(10_000, K, d, seed=46)
    rows = learners.make(name, n_features=d, n_tasks=K, **params)
    batched = learners.make(name, n_features=d, n_tasks=K, **params)
    s_rows = run(rows, X, y, tasks)
    sizes = np.random.default_rng(0).integers(1, 600, size=100)
    ends = np.cumsum(sizes)
    cuts = [0, *ends[ends < len(X)].tolist(), len(X)]
    s_batch = np.concatenate(
        [
            batched.score_and_learn_many(X[a:b], y[a:b], tasks[a:b])
            for a, b in itertools.pairwise(cuts)
        ]
    )
    wrong_rows, wrong_batch = (s_rows >= 0) != (y > 0), (s_batch >= 0) != (y > 0)
    np.testing.assert_array_equal(wrong_batch, wrong_rows)
    assert rows.state_dict()["state.n_mistakes_"] == batched.state_dict()["state.n_mistakes_"]
    np.testing.assert_allclose(s_batch, s_rows, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(batched.task_weights(), rows.task_weights(), rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- SPD properties
@settings(max_examples=60, deadline=None)
@given(K=st.integers(1, 12), b=st.floats(0.0, 1e3))
def test_b_family_is_spd_and_its_inverse_is_exact(K, b):
    """A_b = (1+b)I - (b/K)11^T: symmetric, eigenvalues 1 (on 1) and 1+b; closed-form inverse."""
    A = b_family_matrix(K, b)
    np.testing.assert_array_equal(A, A.T)
    lam = np.linalg.eigvalsh(A)
    assert lam.min() > 0.999
    np.testing.assert_allclose(lam.max(), 1.0 + b if K > 1 else 1.0, rtol=1e-9)
    np.testing.assert_allclose(check_spd(A), A)
    Ainv = b_family_inverse(K, b)
    np.testing.assert_allclose(A @ Ainv, np.eye(K), atol=1e-9 * (1 + b))
    np.testing.assert_allclose(spd_inverse(A), Ainv, rtol=1e-9, atol=1e-12)


@st.composite
def weighted_graphs(draw: st.DrawFn) -> np.ndarray:
    K = draw(st.integers(1, 10))
    upper = draw(
        st.lists(
            st.one_of(st.just(0.0), st.floats(0.0, 10.0)),
            min_size=K * (K - 1) // 2,
            max_size=K * (K - 1) // 2,
        )
    )
    W = np.zeros((K, K))
    W[np.triu_indices(K, 1)] = upper
    return W + W.T


@settings(max_examples=60, deadline=None)
@given(W=weighted_graphs(), scale=st.floats(0.01, 10.0))
def test_graph_matrix_is_spd_with_eigenvalues_at_least_one(W, scale):
    """A = I + c L for a weighted graph: symmetric, eigenvalues >= 1, 1 an eigenvector (L1 = 0)."""
    A = graph_matrix(W, scale)
    np.testing.assert_array_equal(A, A.T)
    assert np.linalg.eigvalsh(A).min() >= 1.0 - 1e-9
    np.testing.assert_allclose(A @ np.ones(len(A)), np.ones(len(A)), atol=1e-9)
    np.testing.assert_allclose(check_spd(A), A)
    model = learners.make("cmtl", n_features=2, n_tasks=len(A), graph=W, graph_scale=scale)
    np.testing.assert_allclose(model.relation_matrix(), A, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize(
    "bad",
    [
        np.array([[1.0, 2.0], [2.0, 1.0]]),  # symmetric, eigenvalue -1
        np.array([[1.0, 0.5], [0.0, 1.0]]),  # not symmetric
        np.array([[1.0, np.nan], [np.nan, 1.0]]),
        np.ones((2, 3)),
    ],
)
def test_cmtl_rejects_matrices_that_are_not_spd(bad):
    with pytest.raises(ValueError, match=r"interaction matrix|square"):
        learners.make("cmtl", n_features=2, n_tasks=2, A=bad)


@pytest.mark.parametrize(
    ("name", "params"),
    [("ipl", {}), ("stl", {}), ("cmtl", {}), ("cmtl", {"b": 2.0})],
    ids=["ipl", "stl", "cmtl-b=K", "cmtl-b=2"],
)
def test_batch_path_on_integer_features_is_bit_identical(name, params):
    """Integer features make exact ties (score 0) common; the batch kernel sums the same
    integers as the row path (b-family scores unscaled, divided by 1 + b at the end), so the
    scores agree bit for bit and every tie is resolved the same way."""
    K, d, n = 4, 6, 3000
    rng = np.random.default_rng(47)
    X = rng.integers(-2, 3, size=(n, d)).astype(float)
    tasks = rng.integers(K, size=n)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    rows = learners.make(name, n_features=d, n_tasks=K, **params)
    batched = learners.make(name, n_features=d, n_tasks=K, **params)
    s_rows = run(rows, X, y, tasks)
    s_batch = np.concatenate(
        [
            batched.score_and_learn_many(X[i : i + 400], y[i : i + 400], tasks[i : i + 400])
            for i in range(0, n, 400)
        ]
    )
    assert (s_rows == 0.0).sum() > 20
    np.testing.assert_array_equal(s_batch, s_rows)
    np.testing.assert_array_equal(batched.task_weights(), rows.task_weights())


@pytest.mark.parametrize("name", ["cmtl", "pa-global", "stl", "ipl"])
def test_restored_weights_live_in_the_kernel_buffer_and_not_in_the_source(name):
    """A restore writes the weights into the kernel buffer's rows: the learner goes on
    exactly as the saved one, and shares no memory with the state it was given."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 6))
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    tasks = rng.integers(0, 3, size=300)
    model = learners.make(name, n_features=6, n_tasks=3)
    model.score_and_learn_many(X[:150], y[:150], tasks[:150])
    state = model.state_dict()
    restored = learners.from_state_dict(state)
    for field in restored.weight_fields:
        weights = getattr(restored, field)
        assert np.may_share_memory(weights, restored._S), field
        assert not np.shares_memory(weights, state[f"state.{field}"]), field
        state[f"state.{field}"][...] = 9.0  # the caller's arrays stay the caller's
    np.testing.assert_array_equal(
        model.score_and_learn_many(X[150:], y[150:], tasks[150:]),
        restored.score_and_learn_many(X[150:], y[150:], tasks[150:]),
    )
    for field in restored.weight_fields:
        np.testing.assert_array_equal(getattr(restored, field), getattr(model, field))
