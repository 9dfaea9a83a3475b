"""``Learner.state_bytes``: an upper estimate of every learner's state, from its shape alone.

The service refuses models over its memory budget with this estimate before
building anything (docs/architecture.md, "Models and generations"), so it must
never be below the real size of ``state_dict()`` and not wildly above it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import learners
from learners import Learner

SHAPES = [(10, 1), (100, 10), (300, 3), (50, 40), (6, 4)]
#: Learners whose estimate is not checked for closeness, and why.
GROWS_WITH_DATA = {
    "cmtl-second-order": "its dual buffers are preallocated for 16 mistakes and grow with "
    "the mistakes; state_dict() holds only the rows used so far",
    "mmperc": "its dual form (D > 400) preallocates buffers for 16 mistakes that grow with "
    "the mistakes; state_dict() holds only the rows used so far",
}


def _array_bytes(learner: Learner) -> int:
    return sum(v.nbytes for v in learner.state_dict().values() if isinstance(v, np.ndarray))


def _trained(name: str, d: int, k: int, params: dict[str, Any]) -> Learner:
    """A learner after two labelled events per task (lazily grown buffers are allocated)."""
    learner = learners.make(name, n_features=d, n_tasks=k, seed=1, **params)
    rng = np.random.default_rng(0)
    for t in list(range(k)) * 2:
        y = float(rng.standard_normal()) if learner.label_kind == "regression" else 1.0
        learner.learn_one(rng.standard_normal(d), y, t)
    return learner


@pytest.mark.parametrize("info", learners.available(), ids=lambda i: i.name)
def test_estimate_bounds_the_state_from_above_and_closely(info: learners.LearnerInfo) -> None:
    cls = learners.get(info.name)
    checked = 0
    for params in cls.conformance_params:
        for d, k in SHAPES:
            try:
                learner = _trained(info.name, d, k, dict(params))
            except ValueError:  # e.g. a fixed 4 x 4 interaction matrix needs K = 4
                continue
            checked += 1
            actual = _array_bytes(learner)
            estimate = cls.state_bytes(d, k, **params)
            assert actual <= estimate, (params, d, k, actual, estimate)
            if info.name not in GROWS_WITH_DATA:
                whole = actual
                if params.get("prune", 0.0) != 0.0:  # pruned: against the whole grid's state
                    whole = _array_bytes(_trained(info.name, d, k, {**params, "prune": 0.0}))
                assert estimate <= 8 * whole + 16_384, (params, d, k, whole, estimate)
            learner.add_task()
            grown = cls.state_bytes(d, k + 1, **params)
            assert _array_bytes(learner) <= grown, (params, d, k + 1)
    assert checked >= len(SHAPES)


def test_estimate_scales_with_the_shape_without_allocating() -> None:
    # 2 x 10^7 x 20 float64 would be 3.2 GB; the estimate is instant
    assert learners.get("cmtl").state_bytes(10_000_000, 20) >= 8 * 10_000_000 * 20
    assert learners.get("omtl-logdet").state_bytes(10, 10_000) >= 4 * 8 * 10_000**2
    assert learners.get("stl").state_bytes(100, 10_000) < 2_000


def test_estimate_rejects_unknown_hyperparameters_like_the_constructor() -> None:
    with pytest.raises(ValueError, match="unknown parameter"):
        learners.get("ella").state_bytes(5, 2, nope=1)
