"""A Perceptron-family batch stopped by a score that overflows (``learners.perceptron.compiled``).

Rows of finite values near the top of float64 drive a score to infinity. Learning them one
by one raises ``ValueError`` at that row, with the rows before it learned and their updates
counted. A batch that a pass runs in place (a small dense batch, a CSR batch, input that
takes the general validation) raises at the same row with the same state and the same
update count; a dense batch at least as large as the weights is restored whole, count
included.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.base import Learner
from learners.checks.common import assert_states_equal

NAMES = ["stl", "ipl", "pt-global", "cmtl", "pa-individual", "pa-global"]
#: Those with a weight vector per task: 20 tasks of 3 values outweigh the 12 x 3 batch.
PER_TASK = ["ipl", "cmtl", "pa-individual"]
N_TASKS = 20
D = 3


def _stream() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, D))
    y = np.where(rng.normal(size=12) > 0, 1.0, -1.0)
    tasks = rng.integers(0, 2, size=12)
    X[6:] = np.sign(X[6:]) * 1.5e308  # finite; their scores overflow once the weights are O(1)
    return X, y, tasks


def _one_by_one(name: str) -> tuple[Learner, int]:
    """The learner after the rows before the first one that raises, and that row."""
    X, y, tasks = _stream()
    model = learners.make(name, n_features=D, n_tasks=N_TASKS)
    for stop in range(X.shape[0]):
        try:
            model.score_and_learn_one(X[stop], float(y[stop]), int(tasks[stop]))
        except ValueError as exc:
            failure = str(exc)
            break
    else:
        raise AssertionError(f"{name}: no score overflowed")
    assert "not finite" in failure
    return model, stop


def _batch_raises(name: str, X: Any) -> Learner:
    _, y, tasks = _stream()
    model = learners.make(name, n_features=D, n_tasks=N_TASKS)
    with pytest.raises(ValueError, match="not finite"):
        model.score_and_learn_many(X, y, tasks)
    return model


def _counter(model: Learner) -> int:
    return int(getattr(model, model.update_counter))  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _quiet_overflow() -> Any:
    with warnings.catch_warnings():  # numpy's input checks square the huge rows
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


CASES = [(name, form) for name in NAMES for form in ("csr", "list")]
CASES += [(name, "small dense") for name in PER_TASK]


@pytest.mark.parametrize(("name", "form"), CASES)
def test_a_batch_stopped_by_an_overflow_holds_and_counts_the_rows_before_it(
    name: str, form: str
) -> None:
    reference, stop = _one_by_one(name)
    assert stop > 0 and _counter(reference) > 0  # rows were learned before the overflow
    X, _, _ = _stream()
    rows: Any = {"csr": sp.csr_matrix(X), "list": X.tolist(), "small dense": X}[form]
    if form == "small dense":  # the in-place pass, not the one restored whole
        assert X.size < reference._S.size  # type: ignore[attr-defined]
    model = _batch_raises(name, rows)
    assert _counter(model) == _counter(reference)
    assert_states_equal(reference.state_dict(), model.state_dict(), f"{name}, {form}")


@pytest.mark.parametrize("name", NAMES)
def test_a_dense_batch_as_large_as_the_weights_is_restored_with_its_count(name: str) -> None:
    X, y, tasks = (
        np.concatenate([a[:6]] * 20 + [a[6:]])  # the same overflow, after 120 ordinary rows
        for a in _stream()
    )
    model = learners.make(name, n_features=D, n_tasks=N_TASKS)
    fresh = learners.make(name, n_features=D, n_tasks=N_TASKS)
    assert X.size >= model._S.size  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="not finite"):
        model.score_and_learn_many(X, y, tasks)
    assert _counter(model) == 0
    assert_states_equal(fresh.state_dict(), model.state_dict(), f"{name} restored")
