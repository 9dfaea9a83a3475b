"""cmtl-second-order: the dual (Schur) form against the primal form of algorithms.md Sec. 1.3."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.perceptron.interaction import b_family_matrix, graph_matrix
from tests.learners.reference import compound, noisy_stream, run, second_order_primal


def test_hand_worked_steps():
    """K = 2, d = 1, b-family with b = K = 2, a = 1.

    ``A = 3I - 11^T = [[2, -1], [-1, 2]]``, ``A^{-1} = (I + 11^T)/3 = [[2/3, 1/3], [1/3, 2/3]]``.

    1. x = 1, task 0, y = -1: no mistakes yet, margin 0, predicts +1: a mistake.
       ``G = [2/3]``, ``Q = (1 + 2/3)^{-1} = 3/5``.
    2. x = 2, task 1, y = +1: ``k = (A^{-1})_{01} * 1 * 2 = 2/3``, ``u = Q k = 2/5``,
       ``kappa = (A^{-1})_{11} * 4 = 8/3``, ``sigma = 1 + 8/3 - (2/3)(2/5) = 17/5``,
       margin ``= a y_M u / sigma = -(2/5)/(17/5) = -2/17`` (primal: ``v0 = (-1, 0)``,
       ``aA + phi1 phi1^T + phi2 phi2^T = [[3, -1], [-1, 6]]``, inverse ``[[6, 1], [1, 3]]/17``,
       ``v0^T inv phi2 = -2/17``). A mistake: ``Q = [[3/5 + u^2/sigma, -u/sigma], [., 1/sigma]]
       = [[11/17, -2/17], [-2/17, 5/17]]`` (= ``(I + G)^{-1}``, ``G = [[2/3, 2/3], [2/3, 8/3]]``).
    3. x = 1, task 0: ``k = (2/3, 2/3)``, ``u = Q k = (6/17, 2/17)``, ``kappa = 2/3``,
       ``sigma = 5/3 - (2/3)(8/17) = 23/17``, margin ``= (-6/17 + 2/17)/(23/17) = -4/23``
       (primal: ``v0 = (-1, 2)``, matrix ``[[4, -1], [-1, 6]]``, inverse ``[[6, 1], [1, 4]]/23``).
    """
    model = learners.make("cmtl-second-order", n_features=1, n_tasks=2)
    assert model.decision_one(np.array([1.0]), 0) == 0.0
    model.learn_one(np.array([1.0]), -1, 0)
    assert model.state_dict()["state.Q_"] == pytest.approx(np.array([[3 / 5]]), abs=1e-15)
    assert model.decision_one(np.array([2.0]), 1) == pytest.approx(-2 / 17, abs=1e-15)
    model.learn_one(np.array([2.0]), 1, 1)
    Q = model.state_dict()["state.Q_"]
    np.testing.assert_allclose(Q, np.array([[11, -2], [-2, 5]]) / 17, atol=1e-15)
    assert model.decision_one(np.array([1.0]), 0) == pytest.approx(-4 / 23, abs=1e-15)
    model.learn_one(np.array([1.0]), 1, 0)  # margin -4/23 predicts -1: a mistake
    assert model.state_dict()["state.n_mistakes_"] == 3


CASES = [
    ({}, lambda K: b_family_matrix(K, K), 1.0),
    ({"a": 0.1, "b": 0.0}, lambda K: np.eye(K), 0.1),
    ({"a": 3.0, "b": 1.5}, lambda K: b_family_matrix(K, 1.5), 3.0),
    (
        {"graph": np.array([[0, 1, 0], [1, 0, 2], [0, 2, 0]], dtype=float), "graph_scale": 0.5},
        lambda K: graph_matrix(np.array([[0, 1, 0], [1, 0, 2], [0, 2, 0]], dtype=float), 0.5),
        1.0,
    ),
    (
        {"A": np.array([[2.0, 0.5, -0.3], [0.5, 1.0, 0.2], [-0.3, 0.2, 1.5]])},
        lambda K: np.array([[2.0, 0.5, -0.3], [0.5, 1.0, 0.2], [-0.3, 0.2, 1.5]]),
        1.0,
    ),
]


@pytest.mark.parametrize(("params", "matrix", "a"), CASES)
def test_dual_equals_primal(params, matrix, a):
    """The dual Schur-complement margins equal the explicit (aA(x) + sum phi phi^T)^{-1} ones."""
    K, d = 3, 4
    X, y, tasks = noisy_stream(400, K, d, seed=11)
    model = learners.make("cmtl-second-order", n_features=d, n_tasks=K, **params)
    dual = run(model, X, y, tasks)
    primal, mistakes = second_order_primal(X, y, tasks, matrix(K), a)
    np.testing.assert_allclose(dual, primal, rtol=1e-9, atol=1e-9)
    assert model.state_dict()["state.n_mistakes_"] == len(mistakes) > 50
    np.testing.assert_allclose(model.relation_matrix(), matrix(K), atol=1e-12)


def test_add_task_rebuilds_the_inverse_for_the_b_family():
    """With b = K, adding a task changes A^{-1} for all tasks; margins follow the new A."""
    K, d, a = 3, 3, 1.0
    X, y, tasks = noisy_stream(150, K, d, seed=12)
    model = learners.make("cmtl-second-order", n_features=d, n_tasks=K)
    run(model, X, y, tasks)
    model.add_task()
    state = model.state_dict()
    s = state["state.n_mistakes_"]
    rows = (state["state.X_data_"], state["state.X_indices_"], state["state.X_indptr_"])
    Xm = sp.csr_matrix(rows, shape=(s, d)).toarray()
    ym, tm = state["state.y_"], state["state.tasks_"]
    A = b_family_matrix(K + 1, K + 1)
    M = a * np.kron(A, np.eye(d)) + sum(
        np.outer(compound(x, t, K + 1), compound(x, t, K + 1)) for x, t in zip(Xm, tm)
    )
    v0 = sum(label * compound(x, t, K + 1) for x, label, t in zip(Xm, ym, tm))
    probe = np.random.default_rng(0).normal(size=(10, d))
    for x in probe:
        for t in range(K + 1):
            phi = compound(x, t, K + 1)
            expected = v0 @ np.linalg.solve(M + np.outer(phi, phi), phi)
            assert model.decision_one(x, t) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_large_a_makes_the_same_mistakes_as_cmtl():
    """As a -> inf, (aA(x) + S)^{-1} -> A(x)^{-1}/a: the first-order multitask Perceptron."""
    K, d = 4, 5
    X, y, tasks = noisy_stream(600, K, d, seed=13)
    second = learners.make("cmtl-second-order", n_features=d, n_tasks=K, a=1e9, b=2.0)
    first = learners.make("cmtl", n_features=d, n_tasks=K, b=2.0)
    s2, s1 = run(second, X, y, tasks), run(first, X, y, tasks)
    np.testing.assert_array_equal(s2 >= 0, s1 >= 0)
    assert second.state_dict()["state.n_mistakes_"] == first.state_dict()["state.n_mistakes_"]


@settings(max_examples=15, deadline=None)
@given(scale=st.floats(0.1, 10.0), seed=st.integers(0, 10_000))
def test_scaling_x_by_c_and_a_by_c_squared_changes_nothing(scale, seed):
    """v0^T (aA + sum phi phi^T)^{-1} phi is invariant under x -> c x, a -> c^2 a."""
    K, d = 3, 3
    X, y, tasks = noisy_stream(80, K, d, seed=seed)
    base = learners.make("cmtl-second-order", n_features=d, n_tasks=K, a=0.7)
    scaled = learners.make("cmtl-second-order", n_features=d, n_tasks=K, a=0.7 * scale**2)
    s_base = run(base, X, y, tasks)
    s_scaled = run(scaled, scale * X, y, tasks)
    np.testing.assert_allclose(s_scaled, s_base, rtol=1e-7, atol=1e-10)


def test_old_states_with_dense_rows_load_and_sparse_high_dimensional_rows_work():
    """States with a dense X_ (the former layout) load; d = 100,000 rows are stored sparse."""
    X, y, tasks = noisy_stream(120, 3, 5, seed=3)
    model = learners.make("cmtl-second-order", n_features=5, n_tasks=3)
    run(model, X, y, tasks)
    state = model.state_dict()
    s = state["state.n_mistakes_"]
    rows = (state.pop("state.X_data_"), state.pop("state.X_indices_"), state.pop("state.X_indptr_"))
    state["state.X_"] = sp.csr_matrix(rows, shape=(s, 5)).toarray()
    restored = learners.from_state_dict(state)
    for x, t in zip(X[:20], tasks[:20], strict=True):
        assert restored.decision_one(x, int(t)) == model.decision_one(x, int(t))
    d = 100_000
    big = learners.make("cmtl-second-order", n_features=d, n_tasks=2)
    rng = np.random.default_rng(1)
    for i in range(200):
        idx = np.sort(rng.choice(d, size=100, replace=False))
        big.learn_one((idx, rng.normal(size=100)), 1.0 if i % 3 else -1.0, i % 2)
    stored = big.state_dict()
    assert stored["state.X_data_"].shape[0] == 100 * stored["state.n_mistakes_"]


@pytest.mark.parametrize("scale", [1e9, 1e10, 1e15, 3e38])
@pytest.mark.parametrize("params", [{}, {"b": 0.5}, {"a": 0.1}])
def test_rows_of_huge_values_keep_sigma_at_a(scale, params):
    """``sigma >= a`` (the Schur complement of ``a I`` plus a PSD Gram matrix); on rows of
    values near 1e9 and more rounding took the computed value to 0 and the margin raised
    ZeroDivisionError, in the kernel and the reference alike, on every later row of the
    task. Kept at ``a``: the margins stay finite, the learner's own mistake is scored
    with its label's sign, kernel and reference agree, and a later ordinary row is
    learned."""
    from learners.checks.kernels import reference_of

    x = np.array([scale, 1.0, 0.0])
    compiled = learners.make("cmtl-second-order", n_features=3, n_tasks=2, seed=0, **params)
    for m in (compiled, reference_of(compiled)):
        m.learn_one(x, -1.0, 0)
        m.learn_one(x, -1.0, 0)  # scored before it is learned: no second mistake
        assert m.n_mistakes_ == 1
        margin = m.decision_one(x, 0)
        assert np.isfinite(margin) and margin < 0.0
        scores = m.score_and_learn_many(
            sp.csr_matrix(np.array([x, 2.0 * x])), np.array([1.0, -1.0]), np.array([0, 1])
        )
        assert np.isfinite(scores).all()
        ordinary = np.array([0.0, 1.0, -1.0])
        m.learn_one(ordinary, 1.0, 1)
        assert m.decision_one(ordinary, 1) > 0.0
    reference = reference_of(compiled)
    for row, y, t in ((x, -1.0, 0), (x, -1.0, 0), (x, 1.0, 0), (2.0 * x, -1.0, 1)):
        reference.learn_one(row, y, t)
    probe = np.array([scale, -1.0, 2.0])
    fresh = learners.make("cmtl-second-order", n_features=3, n_tasks=2, seed=0, **params)
    fresh.score_and_learn_many(
        np.array([x, x, x, 2.0 * x]), np.array([-1.0, -1.0, 1.0, -1.0]), np.array([0, 0, 0, 1])
    )
    assert fresh.decision_one(probe, 0) == pytest.approx(reference.decision_one(probe, 0), rel=1e-9)
