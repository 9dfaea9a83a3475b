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

import pytest

import learners
from learners.rom.pgd import RobustPGD
from tests.learners.layout_checks import assert_auto_chooses_by_width, assert_orders_agree
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


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("params", PARAMS)
def test_by_feature_equals_by_row_bit_for_bit(params: dict[str, Any], sparse: bool) -> None:
    K, d = 3, 40
    stream = random_stream(sparse, 900, K, d, seed=11)
    rows, features = _pgd(d, K, "rows", **params), _pgd(d, K, "features", **params)
    assert_orders_agree(rows, features, stream, sparse, STATE, _laid_out_by_feature)
    assert rows.n_updates_ > 100


def test_auto_lays_out_wide_rows_by_feature() -> None:
    """``auto``: by feature from INTERLEAVE_MIN_FEATURES entries on, the bias included;
    an unknown order is refused."""
    assert_auto_chooses_by_width(_pgd, lambda model: model.interleaved, _laid_out_by_feature)
