"""The ELLA family on extreme feature values (docs/algorithms.md Sec. 4.10).

An example whose features dwarf the task's others makes the refresh's LU solve meet a zero
pivot; the task then gets the least-squares solution and keeps learning. Values beyond
:data:`~learners.ella.model.MAX_FEATURE_MAGNITUDE` are refused before anything changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import learners
from learners.checks.common import assert_states_equal
from learners.ella.model import MAX_FEATURE_MAGNITUDE, BasisLearner
from learners.ella.solve import solve_symmetric

ELLA = ("ella", "ella-svd", "ella-incremental", "ella-dual", "mtl-svd")
D, K = 6, 3


def _stream(n: int = 300) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((n, D))
    tasks = rng.integers(0, K, n)
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y, tasks


def _trained(name: str, **params: Any) -> tuple[BasisLearner, np.ndarray, np.ndarray, np.ndarray]:
    X, y, tasks = _stream()
    model = learners.make(name, n_features=D, n_tasks=K, k=2, **params)
    assert isinstance(model, BasisLearner)
    model.score_and_learn_many(X[:150], y[:150], tasks[:150])
    return model, X, y, tasks


@pytest.mark.parametrize("base_learner", ["linear", "logistic"])
@pytest.mark.parametrize("name", ELLA)
def test_an_example_of_huge_features_leaves_its_task_learning(name: str, base_learner: str) -> None:
    """One example with every feature near 1e10: with the linear base learner its square
    swallows the rest of the task's ``X^T X`` and the ridge, and LU finds the refresh's
    system singular (``LinAlgError``, which every later refresh of the task, whose
    statistics keep the example, would raise again). Every call succeeds and the state
    stays finite."""
    model, X, y, tasks = _trained(name, base_learner=base_learner)
    task = int(tasks[150])
    model.learn_one(np.sign(X[150]) * 1e10, y[150], task)
    model.refresh(task)
    scores = model.score_and_learn_many(X[151:], y[151:], tasks[151:])
    model.refresh()
    assert np.all(np.isfinite(scores))
    for key, value in model.state_dict().items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert np.all(np.isfinite(value)), key
    weights = model.task_weights()
    assert weights is not None and np.all(np.isfinite(weights))


@pytest.mark.parametrize("name", ELLA)
def test_values_up_to_the_limit_are_learned(name: str) -> None:
    """A feature of magnitude exactly the limit is learned, and its task's statistics stay finite."""
    model, X, y, tasks = _trained(name)
    row = X[150].copy()
    row[2] = -MAX_FEATURE_MAGNITUDE
    model.learn_one(row, y[150], int(tasks[150]))
    model.refresh(int(tasks[150]))
    assert model.count_[int(tasks[150])] == np.sum(tasks[:151] == tasks[150])
    assert np.all(np.isfinite(model.xtx_)) and np.all(np.isfinite(model.L_))
    assert np.all(np.isfinite(model.score_and_learn_many(X[151:], y[151:], tasks[151:])))


@pytest.mark.parametrize("value", [1e51, -1e120])
@pytest.mark.parametrize("name", ELLA)
def test_values_beyond_the_limit_are_refused_and_change_nothing(name: str, value: float) -> None:
    """Every entry that learns (or fits, :meth:`encode`) refuses a row with a value beyond the
    limit with a ``ValueError`` that names it; the state, generator included, is unchanged,
    whatever rows of the batch came before the bad one."""
    model, X, y, tasks = _trained(name)
    batch = X[150:160].copy()
    batch[-1, 4] = value
    calls: dict[str, Callable[[], object]] = {
        "learn_one": lambda: model.learn_one(batch[-1], y[159], int(tasks[159])),
        "score_and_learn_one": lambda: model.score_and_learn_one(batch[-1], y[159], 0),
        "score_and_learn_many": lambda: model.score_and_learn_many(
            batch, y[150:160], tasks[150:160]
        ),
        "learn_many": lambda: model.learn_many(batch, y[150:160], tasks[150:160]),
        "encode": lambda: model.encode(batch, y[150:160]),
    }
    before = model.state_dict()
    for call, run in calls.items():
        with pytest.raises(
            ValueError, match=re.escape(f"magnitude at most {MAX_FEATURE_MAGNITUDE:g}")
        ):
            run()
        assert_states_equal(model.state_dict(), before, f"{name} after {call}")


@pytest.mark.parametrize("name", ELLA)
def test_regression_targets_beyond_the_limit_are_refused_and_change_nothing(name: str) -> None:
    """A regression target beyond the limit (``X^T y`` and the weights carry it; 1e300
    made every array of the model NaN) is refused by every entry that learns or fits,
    with the state unchanged; a target at the limit is learned, the state finite."""
    model, X, y, tasks = _trained(name)
    assert model.label_kind == "regression"
    targets = y[150:160].copy()
    targets[-1] = 1e300
    calls: dict[str, Callable[[], object]] = {
        "learn_one": lambda: model.learn_one(X[159], 1e300, 0),
        "score_and_learn_one": lambda: model.score_and_learn_one(X[159], -1e300, 0),
        "score_and_learn_many": lambda: model.score_and_learn_many(
            X[150:160], targets, tasks[150:160]
        ),
        "learn_many": lambda: model.learn_many(X[150:160], targets, tasks[150:160]),
        "encode": lambda: model.encode(X[150:160], targets),
    }
    before = model.state_dict()
    for call, run in calls.items():
        with pytest.raises(ValueError, match=re.escape("targets of magnitude at most 1e+50")):
            run()
        assert_states_equal(model.state_dict(), before, f"{name} after {call}")
    model.learn_one(X[150], MAX_FEATURE_MAGNITUDE, 0)
    model.refresh(0)
    assert all(np.all(np.isfinite(v)) for v in (model.xty_, model.L_, model.S_))
    assert np.isfinite(model.decision_one(X[151], 1))


def test_solve_symmetric_takes_lu_where_it_succeeds_and_least_squares_where_it_meets_a_zero_pivot() -> (
    None
):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((5, 5))
    M = A @ A.T + 0.1 * np.eye(5)
    r = rng.standard_normal(5)
    assert np.array_equal(solve_symmetric(M, r, True), np.linalg.solve(M, r))
    assert np.array_equal(solve_symmetric(M, r, False), np.linalg.lstsq(M, r, rcond=None)[0])
    # 1e20 * 1e20 - 1e40 * 1 is exactly 0 in double precision: LU's second pivot is 0
    singular = np.array([[1e40, 1e20], [1e20, 1.0]])
    rhs = np.array([1e20, 1.0])
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.solve(singular, rhs)
    v = solve_symmetric(singular, rhs, True)
    assert np.array_equal(v, np.linalg.lstsq(singular, rhs, rcond=None)[0])
    assert np.allclose(singular @ v, rhs, rtol=1e-12)
