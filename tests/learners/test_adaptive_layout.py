"""Memory order of the adaptive learners' weights and accumulators (learners.adaptive.layout).

A learner on wide rows lays its state out by feature; the order changes how the
arrays lie in memory, never their values: on sparse rows such a learner gives the
scores and weights of the same learner in C order bit for bit (the sparse loops add
in the same order whatever the strides), on dense rows it follows the numpy
reference to 1e-12. The order survives a new task and a state round trip, and every
compiled pass (the selector's, a member's, the committee's, PEER's) runs on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.adaptive.layout import (
    INTERLEAVE_MIN_FEATURES,
    config_pair,
    in_layout,
    interleave_for,
    is_interleaved,
)
from learners.checks.kernels import reference_of

#: d such that the rows with the bias have exactly INTERLEAVE_MIN_FEATURES entries.
WIDE = INTERLEAVE_MIN_FEATURES - 1
FIELDS = ("U0_", "U_", "G0_", "G_")
GRID = {"etas": "0.5,2.0", "couplings": "0.5,4", "losses": "logistic,hinge,arow"}


def _sparse_stream(n: int, d: int, K: int, seed: int = 0) -> tuple[sp.csr_matrix, Any, Any]:
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=30 / d, format="csr", random_state=seed)
    X.data = rng.standard_normal(X.data.shape[0]) * 3.0
    tasks = rng.integers(0, K, n)
    truth = rng.standard_normal((K, d))
    y = np.where(np.asarray(X.multiply(truth[tasks]).sum(axis=1)).ravel() > 0, 1.0, -1.0)
    return X, y, tasks


def _force_c_order(model: Any) -> None:
    model.U0_, model.G0_ = in_layout(model.U0_, model.G0_, False)
    model.U_, model.G_ = in_layout(model.U_, model.G_, False)


def _assert_same_state(a: Any, b: Any) -> None:
    for name in (*FIELDS, "S_", "stats_", "mistakes_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_wide_learners_lay_out_by_feature_and_narrow_ones_do_not() -> None:
    assert not interleave_for(INTERLEAVE_MIN_FEATURES - 1)
    assert interleave_for(INTERLEAVE_MIN_FEATURES)
    wide = learners.make("adaptive", n_features=WIDE, n_tasks=2, **GRID)
    narrow = learners.make("adaptive", n_features=WIDE - 1, n_tasks=2, **GRID)
    member = learners.make("adaptive-logistic", n_features=WIDE, n_tasks=2)
    assert wide.interleaved and member.interleaved and not narrow.interleaved
    M = wide.configs().size
    assert wide.U_.shape == (M, 2, INTERLEAVE_MIN_FEATURES)
    for name in FIELDS:
        assert is_interleaved(getattr(wide, name)), name
        assert is_interleaved(getattr(member, name)), name
        assert getattr(narrow, name).flags.c_contiguous, name
    # feature j of task k: the M weights side by side, then the M accumulators
    assert wide.U_.strides == (8, 16 * M * INTERLEAVE_MIN_FEATURES, 16 * M)
    assert wide.G_.ctypes.data - wide.U_.ctypes.data == 8 * M
    assert member.G0_.ctypes.data - member.U0_.ctypes.data == 8
    # the fresh state is the C-ordered one: AROW's variances b per task, zeros elsewhere
    fresh = learners.make("adaptive", n_features=WIDE - 1, n_tasks=2, **GRID)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(wide, name)[..., :-1], getattr(fresh, name))


def test_layout_helpers_keep_values_and_shapes() -> None:
    rng = np.random.default_rng(1)
    u, g = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 4, 5))
    pu, pg = in_layout(u, g, True)
    assert is_interleaved(pu) and is_interleaved(pg) and pu.shape == u.shape
    np.testing.assert_array_equal(pu, u)
    np.testing.assert_array_equal(pg, g)
    again = in_layout(pu, pg, True)
    assert again[0] is pu and again[1] is pg  # already so: no copy
    cu, cg = in_layout(pu, pg, False)
    assert cu.flags.c_contiguous and cg.flags.c_contiguous
    np.testing.assert_array_equal(cu, u)
    fu, fg = config_pair((3, 4), np.zeros(3), np.array([1.0, 2.0, 3.0]), True)
    assert is_interleaved(fu) and is_interleaved(fg)
    np.testing.assert_array_equal(fu, np.zeros((3, 4)))
    np.testing.assert_array_equal(fg, np.repeat([[1.0], [2.0], [3.0]], 4, axis=1))


def _learn_in_both_orders(name: str, params: dict[str, Any]) -> tuple[Any, ...]:
    """Scores and bases of ``name`` on the same sparse stream, laid out by feature and
    in C order."""
    X, y, tasks = _sparse_stream(400, WIDE, 3)
    interleaved = learners.make(name, n_features=WIDE, n_tasks=3, **params)
    in_c = learners.make(name, n_features=WIDE, n_tasks=3, **params)
    base_i = getattr(interleaved, "base_", interleaved)
    base_c = getattr(in_c, "base_", in_c)
    for inner_i, inner_c in zip(_selectors(base_i), _selectors(base_c), strict=True):
        assert inner_i.interleaved
        _force_c_order(inner_c)
        assert inner_c.U_.flags.c_contiguous
    got = interleaved.score_and_learn_many(X, y, tasks)
    want = in_c.score_and_learn_many(X, y, tasks)
    for inner_i in _selectors(base_i):
        assert is_interleaved(inner_i.U_)  # the pass wrote in place
        assert np.count_nonzero(inner_i.U_) > 0
    return got, want, base_i, base_c


def _selectors(model: Any) -> list[Any]:
    """The adaptive learners inside ``model``: its views (``adaptive-auto``) or itself."""
    return list(getattr(model, "views_", [model]))


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("adaptive", GRID),
        ("amlc-adaptive", {"base": "adaptive", "base_params": GRID}),
        ("peer-share-adaptive", {"base": "adaptive", "base_params": GRID}),
        ("adaptive-auto", {}),
    ],
)
def test_a_grid_in_lanes_equals_the_c_ordered_one_to_rounding(
    name: str, params: dict[str, Any]
) -> None:
    """By feature a grid runs its passes in lanes (learners/adaptive/lanes_kernels.py),
    whose sums add in another order than C order's loops: the same decisions, numbers
    equal to rounding."""
    got, want, base_i, base_c = _learn_in_both_orders(name, params)
    np.testing.assert_array_equal(np.sign(got), np.sign(want))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    for inner_i, inner_c in zip(_selectors(base_i), _selectors(base_c), strict=True):
        np.testing.assert_array_equal(inner_i.mistakes_, inner_c.mistakes_)
        np.testing.assert_array_equal(inner_i.S_, inner_c.S_)
        for field in FIELDS:
            np.testing.assert_allclose(
                getattr(inner_i, field), getattr(inner_c, field), rtol=1e-9, atol=1e-12
            )


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("adaptive-logistic", {}),
        ("adaptive-arow", {}),
        ("amlc-adaptive", {}),
    ],
)
def test_interleaved_member_equals_the_c_ordered_one_bit_for_bit_on_sparse_rows(
    name: str, params: dict[str, Any]
) -> None:
    got, want, base_i, base_c = _learn_in_both_orders(name, params)
    np.testing.assert_array_equal(got, want)
    _assert_same_state(base_i, base_c)


@pytest.mark.parametrize(
    ("name", "params", "zeros"),
    [("adaptive", GRID, 0.5), ("adaptive-logistic", {}, 0.0), ("adaptive-arow", {}, 0.5)],
)
def test_dense_rows_on_an_interleaved_learner_follow_the_reference(
    name: str, params: dict[str, Any], zeros: float
) -> None:
    """Dense rows (with zeros: the general path; without: a member's one-pass read)."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, WIDE)) * (rng.random((60, WIDE)) >= zeros)
    tasks = rng.integers(0, 2, 60)
    y = np.where(X[:, 0] + X[:, 1] * (tasks - 0.5) > 0, 1.0, -1.0)
    compiled = learners.make(name, n_features=WIDE, n_tasks=2, **params)
    reference = reference_of(compiled)
    assert compiled.interleaved and reference.interleaved
    scores = compiled.score_and_learn_many(X, y, tasks)
    expected = [
        reference.score_and_learn_one(x, label, t)
        for x, label, t in zip(X, y, tasks.tolist(), strict=True)
    ]
    np.testing.assert_array_equal(np.sign(scores), np.sign(expected))
    np.testing.assert_allclose(scores, expected, rtol=1e-12, atol=1e-12)
    for name in FIELDS:
        np.testing.assert_allclose(
            getattr(compiled, name), getattr(reference, name), rtol=1e-12, atol=1e-12
        )


def test_new_task_and_state_round_trip_keep_the_order_and_the_numbers() -> None:
    X, y, tasks = _sparse_stream(300, WIDE, 2, seed=4)
    model = learners.make("adaptive", n_features=WIDE, n_tasks=2, **GRID)
    model.score_and_learn_many(X[:150], y[:150], tasks[:150])
    model.add_task()
    assert model.U_.shape[1] == 3
    for name in FIELDS:
        assert is_interleaved(getattr(model, name)), name
    restored = learners.from_state_dict(model.state_dict())
    for name in FIELDS:
        assert is_interleaved(getattr(restored, name)), name
    _assert_same_state(model, restored)
    rest = np.where(tasks[150:] == 1, 2, tasks[150:])  # the new task learns too
    np.testing.assert_array_equal(
        model.score_and_learn_many(X[150:], y[150:], rest),
        restored.score_and_learn_many(X[150:], y[150:], rest),
    )
    _assert_same_state(model, restored)


@pytest.mark.parametrize("memory_order", ["features", "rows"])
def test_restored_state_is_written_into_its_own_arrays(memory_order: str) -> None:
    """The weights and accumulators are restored into the learner's own arrays (in their
    memory order): values equal to the source's, converted to float64, and no array
    shared with the source, which the caller may go on changing."""
    X, y, tasks = _sparse_stream(200, WIDE, 2, seed=6)
    model = learners.make("adaptive", n_features=WIDE, n_tasks=2, memory_order=memory_order, **GRID)
    model.score_and_learn_many(X, y, tasks)
    state = model.state_dict()
    state["state.U_"] = np.asarray(state["state.U_"], dtype=np.float32)
    restored = learners.from_state_dict(state)
    assert restored.U_.dtype == np.float64
    np.testing.assert_array_equal(restored.U_, state["state.U_"].astype(np.float64))
    np.testing.assert_array_equal(restored.G_, model.G_)
    assert is_interleaved(restored.U_) == (memory_order == "features")
    for name in FIELDS:
        source = state[f"state.{name}"]
        assert not np.shares_memory(getattr(restored, name), source), name
        before = getattr(restored, name).copy()
        source[...] = 7.0
        np.testing.assert_array_equal(getattr(restored, name), before)


def test_adaptive_auto_views_interleave_on_wide_rows() -> None:
    X, y, tasks = _sparse_stream(200, WIDE, 2, seed=5)
    model = learners.make("adaptive-auto", n_features=WIDE, n_tasks=2)
    assert all(view.interleaved for view in model.views_)
    scores = model.score_and_learn_many(X, y, tasks)
    assert np.all(np.isfinite(scores))
    assert int(model.view_mistakes_.sum()) > 0


def test_memory_order_parameter_overrides_the_width_rule() -> None:
    rows = learners.make("adaptive", n_features=WIDE, n_tasks=2, memory_order="rows", **GRID)
    features = learners.make("adaptive-logistic", n_features=5, n_tasks=2, memory_order="features")
    assert not rows.interleaved and rows.U_.flags.c_contiguous
    assert features.interleaved and is_interleaved(features.U_)
    auto = learners.make("adaptive-auto", n_features=5, n_tasks=2, memory_order="features")
    assert all(view.interleaved for view in auto.views_)
    with pytest.raises(ValueError, match="memory_order"):
        learners.make("adaptive", n_features=5, n_tasks=2, memory_order="columns")
    # the same decisions in either order, numbers equal to rounding (the grid runs in
    # lanes by feature)
    X, y, tasks = _sparse_stream(300, 40, 2, seed=6)
    a = learners.make("adaptive", n_features=40, n_tasks=2, memory_order="features", **GRID)
    b = learners.make("adaptive", n_features=40, n_tasks=2, memory_order="rows", **GRID)
    got, want = a.score_and_learn_many(X, y, tasks), b.score_and_learn_many(X, y, tasks)
    np.testing.assert_array_equal(np.sign(got), np.sign(want))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(a.mistakes_, b.mistakes_)
    for name in FIELDS:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-9, atol=1e-12)
    restored = learners.from_state_dict(a.state_dict())
    assert restored.interleaved and is_interleaved(restored.U_)
