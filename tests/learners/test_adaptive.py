"""Adaptive learners: golden steps from the update equations (docs/algorithms.md Sec. 11),
the compiled pass against the numpy reference, and the invariants of the updates."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.adaptive.configs import Configs
from learners.adaptive.kernels import warm
from learners.adaptive.steps import HINGE, LOGISTIC, invariant_step, invariant_step_compiled
from learners.checks.kernels import reference_of

X1 = np.array([2.0, -1.0])


def member(name: str, **params: Any) -> learners.Learner:
    return learners.make(name, n_features=2, n_tasks=2, append_bias=False, **params)


# ---------------------------------------------------------------- golden steps
def test_hinge_first_step_by_hand() -> None:
    """x = (2, -1), y = +1: s = (2, 1), N = 2, t = 1, scale = 1/sqrt(2); g = -1, G = (4, 1),
    rates 0.5 / (s sqrt(G)) = (1/8, 1/2) in both parts, h = 2 (4/8 + 1/2) / sqrt(2) = sqrt(2);
    the invariant hinge step stops at the margin: dz = min(h, 1) = 1, a = dz / h * scale = 1/2,
    so u_0 = u_1 = a rate x = (1/8, -1/4)."""
    model = member("adaptive-hinge", eta=0.5, b=1.0)
    assert model.score_and_learn_one(X1, 1, task=0) == 0.0
    np.testing.assert_allclose(model.U0_[0], [0.125, -0.25], rtol=0, atol=1e-15)
    np.testing.assert_allclose(model.U_[0, 0], [0.125, -0.25], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(model.U_[0, 1], [0.0, 0.0])
    assert model.decision_one(X1, task=0) == pytest.approx(1.0, abs=1e-15)
    assert model.decision_one(X1, task=1) == pytest.approx(0.5, abs=1e-15)
    np.testing.assert_array_equal(model.S_, [2.0, 1.0])
    np.testing.assert_array_equal(model.stats_, [2.0, 1.0])


def test_growing_normaliser_shrinks_the_weights_of_that_feature() -> None:
    """x = (1, 1), y = +1 puts the margin at 1 (hinge, h = sqrt(2) >= 1) with equal weights
    on both features. Then x = (4, 1): s_0 grows 1 -> 4, so u_0j and u_kj of feature 0 shrink
    by 1/4 (VW's rescaling); the margin is then exactly 1 again and the hinge step is 0."""
    model = member("adaptive-hinge", eta=0.5, b=1.0)
    model.learn_one(np.array([1.0, 1.0]), 1, task=0)
    u0, u1 = model.U0_[0].copy(), model.U_[0, 0].copy()
    assert u0[0] == u0[1] and model.decision_one(np.array([1.0, 1.0]), 0) == pytest.approx(1.0)
    assert model.score_and_learn_one(np.array([4.0, 1.0]), 1, task=0) == pytest.approx(2.5)
    np.testing.assert_array_equal(model.U0_[0], [u0[0] / 4, u0[1]])
    np.testing.assert_array_equal(model.U_[0, 0], [u1[0] / 4, u1[1]])
    np.testing.assert_array_equal(model.S_, [4.0, 1.0])


def test_logistic_first_step_solves_the_invariant_equation() -> None:
    """Same x: g = -1/2, G = (1, 1/4), rates (1/4, 1) in both parts, h = 2 (1 + 1) / sqrt(2)
    = 2 sqrt(2); the new margin z solves z + e^z = 0 + e^0 + h (Karampatziakis & Langford),
    and the shared part carries half of it (equal rates in both parts)."""
    model = member("adaptive-logistic", eta=0.5, b=1.0)
    model.learn_one(X1, 1, task=0)
    z = model.decision_one(X1, task=0)
    assert z + math.exp(z) == pytest.approx(1.0 + 2.0 * math.sqrt(2.0), abs=1e-12)
    assert model.decision_one(X1, task=1) == pytest.approx(z / 2, abs=1e-15)
    ratio = model.U0_[0] / X1
    np.testing.assert_allclose(ratio, ratio[0] * np.array([1.0, 4.0]), rtol=1e-14)


def test_arow_first_step_by_hand() -> None:
    """Sigma = 1 (shared), b = 1 (task): v = 5 + 5, beta = 1/(v + r) = 1/11, alpha = 1/11,
    u += alpha y Sigma x in both parts; Sigma_j <- 1 / (1 / Sigma_j + x_j^2 / r) = (1/5, 1/2)."""
    model = member("adaptive-arow", r=1.0, b=1.0)
    model.learn_one(X1, 1, task=1)
    np.testing.assert_allclose(model.U0_[0], [2 / 11, -1 / 11], rtol=1e-15)
    np.testing.assert_allclose(model.U_[0, 1], [2 / 11, -1 / 11], rtol=1e-15)
    np.testing.assert_allclose(model.G0_[0], [0.2, 0.5], rtol=1e-15)
    np.testing.assert_allclose(model.G_[0, 1], [0.2, 0.5], rtol=1e-15)
    np.testing.assert_array_equal(model.G_[0, 0], [1.0, 1.0])
    assert model.decision_one(X1, task=1) == pytest.approx(10 / 11, abs=1e-15)
    # beyond the margin AROW does not move
    before = model.state_dict()
    model.learn_one(5 * X1, 1, task=1)
    np.testing.assert_array_equal(model.U0_, before["state.U0_"])


def test_coupling_zero_is_one_pooled_model() -> None:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    tasks = rng.integers(0, 2, 200)
    model = member("adaptive-logistic", b=0.0)
    model.score_and_learn_many(X, y, tasks)
    np.testing.assert_array_equal(model.U_, 0.0)
    pooled = member("adaptive-logistic", b=0.0)
    pooled.score_and_learn_many(X, y, np.zeros(200, dtype=np.int64))
    np.testing.assert_array_equal(model.U0_, pooled.U0_)


# ---------------------------------------------------------------- the selector
def test_selector_runs_its_members_and_predicts_with_the_leader() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 5))
    tasks = rng.integers(0, 3, 400)
    y = np.where(X[:, 0] + (tasks - 1) * X[:, 1] + 0.3 * rng.standard_normal(400) > 0, 1.0, -1.0)
    selector = learners.make(
        "adaptive", n_features=5, n_tasks=3, losses="logistic,hinge", etas="0.5", couplings="2"
    )
    assert selector.configuration_names() == ["logistic eta=0.5 b=2", "hinge eta=0.5 b=2"]
    members = [
        learners.make(name, n_features=5, n_tasks=3, eta=0.5, b=2.0)
        for name in ("adaptive-logistic", "adaptive-hinge")
    ]
    mistakes = np.zeros(2, dtype=np.int64)
    for x, label, t in zip(X, y, tasks.tolist(), strict=True):
        member_scores = [m.score_and_learn_one(x, label, t) for m in members]
        lead = int(np.argmin(mistakes))  # the first on ties
        assert selector.score_and_learn_one(x, label, t) == pytest.approx(
            member_scores[lead], abs=1e-12
        )
        mistakes += [(s >= 0) != (label > 0) for s in member_scores]
    np.testing.assert_array_equal(selector.mistakes_, mistakes)
    np.testing.assert_allclose(selector.U0_[1], members[1].U0_[0], rtol=0, atol=1e-12)
    assert selector.leader() == int(np.argmin(mistakes))


def test_grid_gives_arow_one_configuration_per_coupling() -> None:
    c = Configs.grid(["hinge", "arow"], [0.1, 1.0], [0.0, 2.0], r=0.5)
    assert [c.describe(m) for m in range(c.size)] == [
        "hinge eta=0.1 b=0",
        "hinge eta=1 b=0",
        "hinge eta=0.1 b=2",
        "hinge eta=1 b=2",
        "arow r=0.5 b=0",
        "arow r=0.5 b=2",
    ]


def test_arow_couplings_replace_the_couplings_of_the_arow_configurations_only() -> None:
    c = Configs.grid(["logistic", "arow"], [1.0], [0.5, 8.0], r=1.0, arow_couplings=[0.25])
    assert [c.describe(m) for m in range(c.size)] == [
        "logistic eta=1 b=0.5",
        "logistic eta=1 b=8",
        "arow r=1 b=0.25",
    ]
    grid = {"losses": "logistic,arow", "etas": "1.0", "couplings": "0.5,8.0"}
    selector = learners.make("adaptive", n_features=2, n_tasks=1, arow_couplings="0.25", **grid)
    assert selector.configuration_names() == [c.describe(m) for m in range(c.size)]
    same = learners.make("adaptive", n_features=2, n_tasks=1, **grid)
    assert same.configuration_names()[2:] == ["arow r=1 b=0.5", "arow r=1 b=8"]


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("losses", "logistic,squared"),
        ("etas", "0.5,0"),
        ("couplings", "-1"),
        ("etas", ""),
        ("arow_couplings", "0.5,-2"),
    ],
)
def test_bad_grids_are_rejected(param: str, value: str) -> None:
    with pytest.raises(ValueError, match=param):
        learners.make("adaptive", n_features=2, n_tasks=1, **{param: value})


# ---------------------------------------------------------------- kernel vs reference
ALL = [
    ("adaptive-logistic", {}),
    ("adaptive-hinge", {"b": 0.0, "eta": 2.0}),
    ("adaptive-arow", {"r": 0.3, "b": 2.0}),
    ("adaptive", {"losses": "logistic,hinge,arow", "etas": "0.2,1", "couplings": "0,1"}),
    ("adaptive-logistic", {"l2_normalize": True, "append_bias": False}),
]


def _stream(sparse: bool, n: int = 600, d: int = 12, K: int = 4) -> tuple[Any, ...]:
    rng = np.random.default_rng(11)
    X = rng.standard_normal((n, d)) * rng.choice([0.01, 1.0, 50.0], size=d)
    X[rng.random((n, d)) < 0.4] = 0.0  # zeros in dense rows too
    tasks = rng.integers(0, K, n)
    truth = rng.standard_normal((K, d))
    y = np.where(np.einsum("ij,ij->i", X, truth[tasks]) > 0, 1.0, -1.0)
    return (sp.csr_matrix(X) if sparse else X), X, y, tasks, K


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize(("name", "params"), ALL)
def test_kernel_equals_the_numpy_reference(name: str, params: dict, sparse: bool) -> None:
    batch, X, y, tasks, K = _stream(sparse)
    compiled = learners.make(name, n_features=X.shape[1], n_tasks=K, **params)
    reference = reference_of(compiled)
    scores = np.concatenate(
        [compiled.score_and_learn_many(batch[:250], y[:250], tasks[:250]), np.empty(0)]
    )
    compiled.add_task()
    reference_scores = [
        reference.score_and_learn_one(x, label, t)
        for x, label, t in zip(X[:250], y[:250], tasks[:250].tolist(), strict=True)
    ]
    reference.add_task()
    scores = np.concatenate([scores, compiled.score_and_learn_many(batch[250:], y[250:], 4)])
    reference_scores += [
        reference.score_and_learn_one(x, label, 4)
        for x, label in zip(X[250:], y[250:], strict=True)
    ]
    np.testing.assert_array_equal(np.sign(scores), np.sign(reference_scores))
    np.testing.assert_allclose(scores, reference_scores, rtol=1e-12, atol=1e-12)
    a, b = compiled.state_dict(), reference.state_dict()
    for key in ("state.U0_", "state.U_", "state.G0_", "state.G_", "state.S_", "state.stats_"):
        np.testing.assert_allclose(a[key], b[key], rtol=1e-12, atol=1e-12, err_msg=key)
    np.testing.assert_array_equal(a["state.mistakes_"], b["state.mistakes_"])


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("adaptive-logistic", {}),
        ("adaptive-logistic", {"b": 0.0}),
        ("adaptive-hinge", {"b": 2.0}),
        ("adaptive-arow", {"b": 0.0}),
        ("adaptive-arow", {"r": 0.5}),
        ("adaptive-logistic", {"l2_normalize": True}),
    ],
)
def test_kernel_equals_the_reference_on_dense_rows_without_zeros(name: str, params: dict) -> None:
    """Dense rows without a zero entry take the member's one-pass read of the batch
    (scores, normaliser and copy together); rows where the normaliser grows take the
    general path in between: scores and state follow the reference."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 7)) * np.array([0.01, 1.0, 1.0, 5.0, 1.0, 1.0, 100.0])
    tasks = rng.integers(0, 3, 300)
    y = np.where(X[:, 1] - X[:, 2] * (tasks - 1) + rng.standard_normal(300) > 0, 1.0, -1.0)
    compiled = learners.make(name, n_features=7, n_tasks=3, **params)
    reference = reference_of(compiled)
    scores = np.concatenate(
        [
            compiled.score_and_learn_many(X[i : i + 100], y[i : i + 100], tasks[i : i + 100])
            for i in (0, 100, 200)
        ]
    )
    expected = [
        reference.score_and_learn_one(x, label, t)
        for x, label, t in zip(X, y, tasks.tolist(), strict=True)
    ]
    np.testing.assert_array_equal(np.sign(scores), np.sign(expected))
    np.testing.assert_allclose(scores, expected, rtol=1e-12, atol=1e-12)
    a, b = compiled.state_dict(), reference.state_dict()
    for key in ("state.U0_", "state.U_", "state.G0_", "state.G_", "state.S_", "state.stats_"):
        np.testing.assert_allclose(a[key], b[key], rtol=1e-12, atol=1e-12, err_msg=key)
    np.testing.assert_array_equal(a["state.mistakes_"], b["state.mistakes_"])


@pytest.mark.parametrize("size", [1e-170, 1e110])
def test_kernel_equals_the_reference_on_extreme_feature_sizes(size: float) -> None:
    """Features of size 1e110 (``s_j sqrt(G_0j) sqrt(G_kj)`` overflows) and 1e-170 (``G_j``
    underflows): the compiled rates still follow the reference's."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 3)) * np.array([size, 1.0, 1.0])
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    tasks = rng.integers(0, 2, 40)
    compiled = learners.make("adaptive-logistic", n_features=3, n_tasks=2)
    reference = reference_of(compiled)
    scores = compiled.score_and_learn_many(X, y, tasks)
    # the numpy reference meets 0 and inf in such features' rates (numpy warns about it);
    # what matters is that the kernel ends where the reference does
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        expected = [
            reference.score_and_learn_one(x, label, t)
            for x, label, t in zip(X, y, tasks.tolist(), strict=True)
        ]
    np.testing.assert_allclose(scores, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(compiled.U0_, reference.U0_, rtol=1e-12, atol=0.0)
    np.testing.assert_allclose(compiled.U_, reference.U_, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("adaptive-logistic", {}),
        ("adaptive-hinge", {"b": 0.0}),
        ("adaptive-logistic", {"outlier_gamma": 0.05, "b": 0.5}),
        ("adaptive", {"losses": "logistic,hinge", "etas": "0.2,1", "couplings": "0,1"}),
        ("adaptive", {"losses": "logistic,hinge", "couplings": "0,1", "memory_order": "features"}),
    ],
)
def test_rows_whose_rates_overflow_teach_nothing_and_leave_the_state_finite(
    name: str, params: dict, sparse: bool
) -> None:
    """Every value near 1e-160: ``g^2 x_j^2`` underflows, the rates overflow and ``h`` is
    infinite, so the step is skipped (docs/algorithms.md Sec. 11.2): ``a = 0`` along an
    infinite rate would put NaN into the weights, and every later score would be NaN, at
    any scale. The kernel (the grid's lanes included) and the reference both skip it."""
    batch, X, y, tasks, K = _stream(sparse)
    tiny = batch * 1e-160
    compiled = learners.make(name, n_features=X.shape[1], n_tasks=K, **params)
    reference = reference_of(compiled)
    scores = compiled.score_and_learn_many(tiny[:300], y[:300], tasks[:300])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        expected = [
            reference.score_and_learn_one(x, label, t)
            for x, label, t in zip(X[:300] * 1e-160, y[:300], tasks[:300].tolist(), strict=True)
        ]
    np.testing.assert_array_equal(scores, 0.0)
    np.testing.assert_array_equal(expected, 0.0)
    for key, value in compiled.state_dict().items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert np.all(np.isfinite(value)), key
    # later rows of ordinary size are learned about as well as by a fresh learner
    later = compiled.score_and_learn_many(batch[300:], y[300:], tasks[300:])
    fresh = learners.make(name, n_features=X.shape[1], n_tasks=K, **params)
    baseline = fresh.score_and_learn_many(batch[300:], y[300:], tasks[300:])
    assert np.all(np.isfinite(later))
    right = np.mean(np.sign(later[-150:]) == y[-150:])
    assert right >= np.mean(np.sign(baseline[-150:]) == y[-150:]) - 0.05


def test_warm_compiles_the_kernel() -> None:
    warm()


# ---------------------------------------------------------------- invariants
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(-6, 6), min_size=6, max_size=6),
    st.sampled_from(["adaptive-logistic", "adaptive-hinge"]),
    st.integers(0, 1000),
)
def test_normalised_updates_ignore_the_scale_of_each_feature(
    exponents: list[int], name: str, seed: int
) -> None:
    """Scaling feature j by c_j > 0 scales s_j by c_j, G_j by c_j^2 and u_j by 1/c_j, so every
    score is unchanged (powers of two make it exact in floating point)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((120, 6))
    tasks = rng.integers(0, 3, 120)
    y = np.where(X[:, 0] - X[:, 1] * (tasks - 1) + 0.5 * rng.standard_normal(120) > 0, 1.0, -1.0)
    scaled = X * np.exp2(np.array(exponents, dtype=float))
    a = learners.make(name, n_features=6, n_tasks=3)
    b = learners.make(name, n_features=6, n_tasks=3)
    np.testing.assert_array_equal(
        a.score_and_learn_many(X, y, tasks), b.score_and_learn_many(scaled, y, tasks)
    )


@settings(max_examples=200, deadline=None)
@given(st.floats(-50.0, 60.0), st.floats(1e-8, 1e6))
def test_invariant_logistic_step_solves_its_ode(z0: float, h: float) -> None:
    """z1 = z0 + dz solves z + e^z = z0 + e^z0 + h, never passes the Euler step h l'(z0), and
    the compiled twin agrees."""
    ez0 = math.exp(z0)
    dz = invariant_step(LOGISTIC, z0, ez0, h)
    euler = h / (1.0 + ez0)
    assert 0.0 <= dz <= euler * (1 + 1e-12) + 1e-300
    if z0 <= 30.0:
        z1 = z0 + dz
        target = z0 + math.exp(z0) + h
        assert z1 + math.exp(z1) == pytest.approx(target, rel=1e-12, abs=1e-12)
    assert invariant_step_compiled(LOGISTIC, z0, ez0, h) == pytest.approx(dz, rel=1e-13, abs=1e-300)


@settings(max_examples=100, deadline=None)
@given(st.floats(-50.0, 5.0), st.floats(0.0, 1e6))
def test_invariant_hinge_step_stops_at_the_margin(z0: float, h: float) -> None:
    dz = invariant_step(HINGE, z0, 0.0, h)
    assert dz == (max(0.0, min(h, 1.0 - z0)))
    assert z0 + dz <= max(1.0, z0) + 1e-12


@pytest.mark.parametrize("name", ["adaptive-logistic", "adaptive-arow", "adaptive"])
def test_log_scale_equals_the_learner_on_log_scaled_rows(name: str) -> None:
    """``log_scale`` (docs/algorithms.md Sec. 0): the same scores and weights as the learner
    without it on rows log-scaled up front, dense and CSR, in a batch and event by event."""
    rng = np.random.default_rng(8)
    X = np.round(rng.exponential(3.0, size=(150, 6))) * (rng.random((150, 6)) < 0.6)
    y = np.where(rng.random(150) < 0.5, 1.0, -1.0)
    tasks = rng.integers(0, 3, size=150)
    logged = np.log1p(X)
    want = learners.make(name, n_features=6, n_tasks=3, l2_normalize=True)
    expected = want.score_and_learn_many(logged, y, tasks)
    for rows in (X, sp.csr_matrix(X)):
        model = learners.make(name, n_features=6, n_tasks=3, l2_normalize=True, log_scale=True)
        np.testing.assert_allclose(
            model.score_and_learn_many(rows, y, tasks), expected, rtol=1e-12, atol=1e-12
        )
        np.testing.assert_allclose(model.U0_, want.U0_, rtol=1e-12, atol=1e-12)
    one = learners.make(name, n_features=6, n_tasks=3, l2_normalize=True, log_scale=True)
    got = [one.score_and_learn_one(x, t, int(k)) for x, t, k in zip(X, y, tasks, strict=True)]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
