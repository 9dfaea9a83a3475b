"""cmtl-pnorm: the p-norm multitask Perceptron reconstruction (algorithms.md Sec. 1.4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

import learners
from learners.perceptron.interaction import b_family_matrix
from learners.perceptron.pnorm import pnorm_link
from tests.learners.reference import inverse_sqrt, noisy_stream, pnorm_perceptron, run

GENERAL_A = np.array([[2.0, 0.5, -0.3], [0.5, 1.0, 0.2], [-0.3, 0.2, 1.5]])


def test_hand_worked_steps():
    """K = 2, d = 1, b = K = 2, p = 3.

    ``A^{-1/2} = (I - J/2)/sqrt(3) + J/2``: diagonal ``(1/2)(1 + 1/sqrt 3)``,
    off-diagonal ``(1/2)(1 - 1/sqrt 3)``; write them ``r0 = 0.788675...``, ``r1 = 0.211324...``.

    1. x = 1, task 0, y = -1: theta = 0, margin 0 predicts +1: mistake,
       ``theta = -z = -(r0, r1)``.
    2. x = 1, task 1: ``||theta||_3 = (r0^3 + r1^3)^{1/3}``,
       ``w = -(r0^2, r1^2)/||theta||_3``, ``z = (r1, r0)``, margin
       ``= -(r0^2 r1 + r1^2 r0)/||theta||_3 = -r0 r1 (r0 + r1)/||theta||_3 = -(1/6)/||theta||_3``
       (``r0 r1 = (1 - 1/3)/4 = 1/6``, ``r0 + r1 = 1``), ``||theta||_3 = 0.79370...``, so -0.209987...
    """
    model = learners.make("cmtl-pnorm", n_features=1, n_tasks=2, p=3.0)
    model.learn_one(np.array([1.0]), -1, 0)
    r0, r1 = 0.5 * (1 + 1 / math.sqrt(3)), 0.5 * (1 - 1 / math.sqrt(3))
    np.testing.assert_allclose(model.state_dict()["state.theta_"], [[-r0], [-r1]], atol=1e-15)
    norm = (r0**3 + r1**3) ** (1 / 3)
    assert model.decision_one(np.array([1.0]), 1) == pytest.approx(-(1 / 6) / norm, rel=1e-14)
    assert (1 / 6) / norm == pytest.approx(0.2099868, rel=1e-6)


@pytest.mark.parametrize(
    "params",
    [{}, {"b": 0.0}, {"b": 1.5, "append_bias": True, "l2_normalize": True}, {"A": GENERAL_A}],
)
def test_p_two_is_cmtl(params):
    """At p = 2 the link is the identity and A^{-1/2} A^{-1/2} = A^{-1}: cmtl, event for event."""
    K, d = 3, 6
    X, y, tasks = noisy_stream(3000, K, d, seed=21)
    pnorm = learners.make("cmtl-pnorm", n_features=d, n_tasks=K, p=2.0, **params)
    cmtl = learners.make("cmtl", n_features=d, n_tasks=K, **params)
    s_pnorm, s_cmtl = run(pnorm, X, y, tasks), run(cmtl, X, y, tasks)
    np.testing.assert_array_equal(s_pnorm >= 0, s_cmtl >= 0)
    np.testing.assert_allclose(s_pnorm, s_cmtl, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(pnorm.task_weights(), cmtl.task_weights(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    ("params", "A", "p"),
    [
        ({"b": 1.0}, b_family_matrix(3, 1.0), 3.0),
        ({}, b_family_matrix(3, 3.0), 4.5),
        ({"A": GENERAL_A}, GENERAL_A, 2.5),
    ],
)
def test_matches_the_dense_reference(params, A, p):
    """Fast form (theta blocks, cached U = A^{-1/2} w) against the explicit Kd loop."""
    K, d = 3, 4
    X, y, tasks = noisy_stream(500, K, d, seed=22)
    model = learners.make("cmtl-pnorm", n_features=d, n_tasks=K, p=p, **params)
    fast = run(model, X, y, tasks)
    slow, mistakes = pnorm_perceptron(X, y, tasks, A, p)
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)
    assert model.state_dict()["state.n_mistakes_"] == len(mistakes) > 50


def test_b_family_embedding_blocks():
    """Block j of z is ((delta_ji - 1/K)/sqrt(1+b) + 1/K) x (algorithms.md Sec. 1.2) = A_b^{-1/2}."""
    K, b = 4, 2.5
    model = learners.make("cmtl-pnorm", n_features=2, n_tasks=K, b=b)
    R = model.state_dict()["state.R_"]
    expected = (np.eye(K) - 1 / K) / math.sqrt(1 + b) + 1 / K
    np.testing.assert_allclose(R, expected, atol=1e-15)
    np.testing.assert_allclose(R, inverse_sqrt(b_family_matrix(K, b)), atol=1e-12)


def test_default_p():
    """p = max(2, 2 ln(K d)) with d the preprocessed dimension."""
    assert learners.make("cmtl-pnorm", n_features=10, n_tasks=4).state_dict()[
        "state.p_"
    ] == pytest.approx(2 * math.log(40))
    assert learners.make("cmtl-pnorm", n_features=1, n_tasks=1).state_dict()["state.p_"] == 2.0
    biased = learners.make("cmtl-pnorm", n_features=9, n_tasks=4, append_bias=True)
    assert biased.state_dict()["state.p_"] == pytest.approx(2 * math.log(40))
    with pytest.raises(ValueError, match="p"):
        learners.make("cmtl-pnorm", n_features=2, n_tasks=2, p=1.5)


def test_add_task_rebuilds_theta_for_the_b_family():
    """With b = K, adding a task changes A^{-1/2} everywhere: theta = A_{K+1}^{-1/2} V."""
    K, d = 3, 4
    X, y, tasks = noisy_stream(300, K, d, seed=23)
    model = learners.make("cmtl-pnorm", n_features=d, n_tasks=K, p=3.0)
    run(model, X, y, tasks)
    model.add_task()
    state = model.state_dict()
    R = inverse_sqrt(b_family_matrix(K + 1, K + 1))
    np.testing.assert_allclose(state["state.theta_"], R @ state["state.V_"], atol=1e-12)
    assert state["state.p_"] == 3.0


@settings(max_examples=30, deadline=None)
@given(
    theta=st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=12),
    p=st.floats(2.0, 30.0),
)
def test_link_is_the_gradient_of_half_squared_p_norm(theta, p):
    """pnorm_link(theta) = grad (1/2)||theta||_p^2, checked by central differences."""
    t = np.array(theta)
    w = pnorm_link(t, p)

    def half_sq(v: np.ndarray) -> float:
        m = np.abs(v).max()
        return 0.0 if m == 0 else 0.5 * (m * np.sum((np.abs(v) / m) ** p) ** (1 / p)) ** 2

    h = 1e-6 * max(1.0, float(np.abs(t).max()))
    for i in range(t.size):
        e = np.zeros_like(t)
        e[i] = h
        numeric = (half_sq(t + e) - half_sq(t - e)) / (2 * h)
        assert w[i] == pytest.approx(numeric, rel=1e-4, abs=1e-4 * max(1.0, np.abs(t).max()))


@settings(max_examples=15, deadline=None)
@given(scale=st.floats(1e-3, 1e3), p=st.floats(2.0, 400.0), seed=st.integers(0, 1000))
@example(scale=1e3, p=300.0, seed=0)
def test_scale_invariant_and_overflow_safe_for_large_p(scale, p, seed):
    """The link is 1-homogeneous, so x -> c x scales every margin by c^2 and keeps the mistakes.

    With p up to 400 and |theta| ~ 1e3, the naive ``|theta_i|^{p-1}`` would overflow.
    """
    K, d = 3, 4
    X, y, tasks = noisy_stream(120, K, d, seed=seed)
    base = learners.make("cmtl-pnorm", n_features=d, n_tasks=K, p=p)
    scaled = learners.make("cmtl-pnorm", n_features=d, n_tasks=K, p=p)
    s_base = run(base, X, y, tasks)
    s_scaled = run(scaled, scale * X, y, tasks)
    assert np.isfinite(s_scaled).all()
    np.testing.assert_allclose(s_scaled, scale**2 * s_base, rtol=1e-8, atol=1e-300)


@pytest.mark.parametrize("sparse", [False, True])
def test_rows_of_subnormal_values_are_learned_without_error(sparse):
    """Rows of values near 1e-310 (below the smallest normal double) make ``max |theta|``
    subnormal; the kernels' power-of-two scale of it stays a normal double (computed as
    ``2.0 ** e`` it would be 0, and the division by it would raise ``ZeroDivisionError``
    half-way through the batch): every score is finite, and rows of ordinary size are
    learned afterwards."""
    K, d = 4, 12
    X, y, tasks = noisy_stream(200, K, d, seed=7)
    model = learners.make("cmtl-pnorm", n_features=d, n_tasks=K)
    tiny = X[:100] * 1e-310
    batch = sp.csr_matrix(tiny) if sparse else tiny
    scores = model.score_and_learn_many(batch, y[:100], tasks[:100])
    assert np.isfinite(scores).all()
    assert model.n_mistakes_ > 0
    later = model.score_and_learn_many(X[100:], y[100:], tasks[100:])
    assert np.isfinite(later).all()
    fresh = learners.make("cmtl-pnorm", n_features=d, n_tasks=K)
    baseline = fresh.score_and_learn_many(X[100:], y[100:], tasks[100:])
    right = np.mean(np.where(later >= 0, 1.0, -1.0) == y[100:])
    assert right >= np.mean(np.where(baseline >= 0, 1.0, -1.0) == y[100:]) - 0.05
    for key, value in model.state_dict().items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert np.isfinite(value).all(), key
