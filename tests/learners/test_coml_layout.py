"""Memory order of ``coml``'s task vectors (``memory_order``).

By feature, ``V_`` is the transpose of a C-ordered (d, K) buffer: the K values of
feature j lie side by side, and the global step's K updates of a sparse row run as one
pass over its non-zeros (:func:`learners.rom.kernels._axpy_columns`). The order changes
where the values lie, never the values: each value gets the product and sum of its
row's own update, so a learner by feature gives the scores and state of the same
learner by row bit for bit, dense or sparse, through a folded scale, a new task and a
state round trip.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import learners
from learners.memory_order import INTERLEAVE_MIN_FEATURES
from learners.rom.coml import CollaborativeMultitask
from tests.learners.test_omtl_kernels import random_stream

STATE = ("u_", "V_", "v_scale_", "b_")
PARAMS = (
    pytest.param({}, id="defaults"),
    pytest.param({"nu": 0.0}, id="independent"),
    pytest.param({"nu": 40.0, "C": 5.0}, id="fold"),
    pytest.param({"nu": 0.3, "C": 0.1, "append_bias": True, "l2_normalize": True}, id="bias"),
)


def _coml(d: int, K: int, order: str, **params: Any) -> CollaborativeMultitask:
    model = learners.make("coml", n_features=d, n_tasks=K, memory_order=order, **params)
    assert isinstance(model, CollaborativeMultitask)
    return model


def _laid_out_by_feature(model: CollaborativeMultitask) -> bool:
    """``V_[:, j]`` contiguous: the transpose of a C-ordered (d, K) array."""
    V = model.V_
    return bool(V.strides == (8, 8 * V.shape[0]) and V.T.flags.c_contiguous)


def _assert_same_state(a: CollaborativeMultitask, b: CollaborativeMultitask) -> None:
    for name in STATE:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("params", PARAMS)
def test_by_feature_equals_by_row_bit_for_bit(params: dict[str, Any], sparse: bool) -> None:
    K, d = 4, 40
    X, y, tasks = random_stream(sparse, 900, K, d, seed=5)
    rows, features = _coml(d, K, "rows", **params), _coml(d, K, "features", **params)
    assert not _laid_out_by_feature(rows) and _laid_out_by_feature(features)
    for lo, hi in ((0, 300), (300, 301), (301, 600)):
        np.testing.assert_array_equal(
            rows.score_and_learn_many(X[lo:hi], y[lo:hi], tasks[lo:hi]),
            features.score_and_learn_many(X[lo:hi], y[lo:hi], tasks[lo:hi]),
        )
    _assert_same_state(rows, features)
    # a new task and a state round trip keep the order and the numbers
    assert rows.add_task() == features.add_task() == K
    restored = CollaborativeMultitask.from_state_dict(features.state_dict())
    assert isinstance(restored, CollaborativeMultitask)
    assert _laid_out_by_feature(features) and _laid_out_by_feature(restored)
    tasks = tasks.copy()
    tasks[600::7] = K
    for i in range(600, 900, 50):
        s = slice(i, i + 50)
        expected = rows.score_and_learn_many(X[s], y[s], tasks[s])
        np.testing.assert_array_equal(features.score_and_learn_many(X[s], y[s], tasks[s]), expected)
        np.testing.assert_array_equal(restored.score_and_learn_many(X[s], y[s], tasks[s]), expected)
    for i in range(850, 900):  # the per-event calls
        row = X[i] if not sparse else X[i].toarray()[0]
        expected_one = rows.score_and_learn_one(row, float(y[i]), int(tasks[i]))
        assert features.score_and_learn_one(row, float(y[i]), int(tasks[i])) == expected_one
        assert restored.score_and_learn_one(row, float(y[i]), int(tasks[i])) == expected_one
    assert np.count_nonzero(rows.V_) > K * d // 2
    _assert_same_state(rows, features)
    _assert_same_state(rows, restored)


def test_zero_coefficients_leave_negative_zeros() -> None:
    """A task whose ``b_k`` is 0 gets no update from the global step: by feature its
    values keep their bits (``-0.0`` stays ``-0.0``), as by row."""
    X = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 1.0]])
    for order in ("rows", "features"):
        model = _coml(3, 3, order)
        model.V_[2] = -0.0  # task 2 is never seen: b_2 stays 0
        model.score_and_learn_many(X, np.array([1.0, -1.0]), np.array([0, 1]))
        assert np.signbit(model.V_[2]).all(), order
        assert model.b_[2] == 0.0 and model.b_[0] > 0.0


def test_auto_lays_out_wide_rows_by_feature() -> None:
    """``auto``: by feature from INTERLEAVE_MIN_FEATURES entries on, the bias included."""
    narrow = _coml(INTERLEAVE_MIN_FEATURES - 1, 2, "auto")
    wide = _coml(INTERLEAVE_MIN_FEATURES, 2, "auto")
    wide_with_bias = _coml(INTERLEAVE_MIN_FEATURES - 1, 2, "auto", append_bias=True)
    assert not narrow.by_feature and not _laid_out_by_feature(narrow)
    assert wide.by_feature and _laid_out_by_feature(wide)
    assert wide_with_bias.by_feature and _laid_out_by_feature(wide_with_bias)
    assert not _coml(INTERLEAVE_MIN_FEATURES, 2, "rows").by_feature


def test_memory_order_is_checked() -> None:
    with pytest.raises(ValueError, match="memory_order"):
        _coml(10, 2, "columns")
