"""Memory order of ``rom-pgd``'s individual and outlier parts (``memory_order``).

By feature, ``P_[k, j]`` and ``Q_[k, j]`` are the two halves of one (K, d, 2) buffer,
so a sparse row reads one cache line per non-zero for both parts. The order changes
where the values lie, never the values: every loop of the pass adds in the same
order whatever the strides, so a learner by feature gives the scores and state of the
same learner by row bit for bit, dense or sparse, through the rare branches (a scale
folded into its vector, an outlier part cleared), a new task and a state round trip.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import learners
from learners.memory_order import INTERLEAVE_MIN_FEATURES
from learners.rom.pgd import RobustPGD
from tests.learners.test_omtl_kernels import random_stream

STATE = ("u_", "u_scale_", "P_", "p_scale_", "Q_", "q_scale_", "q_sqnorm_", "n_updates_")
PARAMS = (
    pytest.param({}, id="defaults"),
    pytest.param({"gamma": 0.05}, id="outliers"),
    pytest.param({"alpha": 1000.0, "beta": 1000.0, "eta": 0.5}, id="fold"),
    pytest.param({"gamma": 1.5, "eta": 0.5}, id="clear"),
    pytest.param({"gamma": 0.3, "eta": 0.2, "beta": 0.5, "append_bias": True}, id="churn"),
)


def _pgd(d: int, K: int, order: str, **params: Any) -> RobustPGD:
    model = learners.make("rom-pgd", n_features=d, n_tasks=K, memory_order=order, **params)
    assert isinstance(model, RobustPGD)
    return model


def _laid_out_by_feature(model: RobustPGD) -> bool:
    """``P_`` and ``Q_`` interleaved: ``Q_[k, j]`` right after ``P_[k, j]`` in one buffer."""
    P, Q = model.P_, model.Q_
    return (
        P.strides == Q.strides == (2 * P.shape[1] * 8, 16)
        and Q.ctypes.data - P.ctypes.data == 8
        and P.base is not None
        and P.base is Q.base
    )


def _assert_same_state(a: RobustPGD, b: RobustPGD) -> None:
    for name in STATE:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("params", PARAMS)
def test_by_feature_equals_by_row_bit_for_bit(params: dict[str, Any], sparse: bool) -> None:
    K, d = 3, 40
    X, y, tasks = random_stream(sparse, 900, K, d, seed=11)
    rows, features = _pgd(d, K, "rows", **params), _pgd(d, K, "features", **params)
    assert not _laid_out_by_feature(rows) and _laid_out_by_feature(features)
    for lo, hi in ((0, 300), (300, 301), (301, 600)):
        np.testing.assert_array_equal(
            rows.score_and_learn_many(X[lo:hi], y[lo:hi], tasks[lo:hi]),
            features.score_and_learn_many(X[lo:hi], y[lo:hi], tasks[lo:hi]),
        )
    # a new task and a state round trip keep the order and the numbers
    assert rows.add_task() == features.add_task() == K
    restored = RobustPGD.from_state_dict(features.state_dict())
    assert isinstance(restored, RobustPGD)
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
    assert rows.n_updates_ > 100
    _assert_same_state(rows, features)
    _assert_same_state(rows, restored)


def test_auto_lays_out_wide_rows_by_feature() -> None:
    """``auto``: by feature from INTERLEAVE_MIN_FEATURES entries on, the bias included."""
    narrow = _pgd(INTERLEAVE_MIN_FEATURES - 1, 2, "auto")
    wide = _pgd(INTERLEAVE_MIN_FEATURES, 2, "auto")
    wide_with_bias = _pgd(INTERLEAVE_MIN_FEATURES - 1, 2, "auto", append_bias=True)
    assert not narrow.interleaved and not _laid_out_by_feature(narrow)
    assert wide.interleaved and _laid_out_by_feature(wide)
    assert wide_with_bias.interleaved and _laid_out_by_feature(wide_with_bias)
    assert not _pgd(INTERLEAVE_MIN_FEATURES, 2, "rows").interleaved


def test_memory_order_is_checked() -> None:
    with pytest.raises(ValueError, match="memory_order"):
        _pgd(10, 2, "columns")
