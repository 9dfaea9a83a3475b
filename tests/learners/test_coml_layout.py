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
from learners.rom.coml import CollaborativeMultitask
from tests.learners.layout_checks import assert_auto_chooses_by_width, assert_orders_agree
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


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("params", PARAMS)
def test_by_feature_equals_by_row_bit_for_bit(params: dict[str, Any], sparse: bool) -> None:
    K, d = 4, 40
    stream = random_stream(sparse, 900, K, d, seed=5)
    rows, features = _coml(d, K, "rows", **params), _coml(d, K, "features", **params)
    assert_orders_agree(rows, features, stream, sparse, STATE, _laid_out_by_feature)
    assert np.count_nonzero(rows.V_) > K * d // 2


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
    """``auto``: by feature from INTERLEAVE_MIN_FEATURES entries on, the bias included;
    an unknown order is refused."""
    assert_auto_chooses_by_width(_coml, lambda model: model.by_feature, _laid_out_by_feature)
