"""Large dense batches run without the NaN/inf check ahead of the pass
(``Learner._batch_pass``): which batches do, and what a score that overflows gives.

The conformance check ``check_bad_values_of_a_large_batch`` holds every learner that
declares ``scores_show_bad_values`` to bad values in such batches; these tests cover
the choice of the path and the rerun of a batch whose finite rows overflow.
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

#: One learner of each family that declares it, and two that do not.
DECLARED = ["amlc", "peer-share", "adaptive-logistic", "rom-pgd", "omtl-logdet"]
UNDECLARED = ["ella", "cmtl-second-order", "adaptive-auto"]


def _batch(n: int, d: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y, rng.integers(0, k, size=n)


@pytest.mark.parametrize("name", DECLARED)
def test_a_large_dense_batch_skips_the_check_and_a_small_one_does_not(name: str) -> None:
    model = learners.make(name, n_features=100, n_tasks=10)
    assert model.scores_show_bad_values
    rows = -(-Learner.unchecked_batch_values // 100)  # the fewest rows of 100 at the floor
    X, _, _ = _batch(rows, 100, 10)
    assert model._skips_value_check(X)
    assert model._skips_value_check(X.astype(np.float32))
    assert not model._skips_value_check(X[:-1])  # fewer values than the floor
    assert not model._skips_value_check(X.astype(np.float16))
    assert not model._skips_value_check(sp.csr_matrix(X))  # CSR: only its values are read
    assert not model._skips_value_check(list(X))


def test_a_state_larger_than_a_quarter_of_the_batch_keeps_the_check() -> None:
    """Copying the state would cost about what the skipped read saves."""
    rows = -(-Learner.unchecked_batch_values // 100)  # the fewest rows of 100 at the floor
    X, _, _ = _batch(rows, 100, 10)
    small = learners.make("adaptive", n_features=100, n_tasks=10)
    wide = learners.make("adaptive", n_features=100, n_tasks=100)
    assert small.state_bytes(100, 10, **small.hyper) // 2 <= X.size
    assert wide.state_bytes(100, 100, **wide.hyper) // 2 > X.size
    assert small._skips_value_check(X)
    assert not wide._skips_value_check(X)


@pytest.mark.parametrize("name", UNDECLARED)
def test_learners_that_do_not_declare_it_keep_the_check(name: str) -> None:
    model = learners.make(name, n_features=10, n_tasks=4)
    assert not model.scores_show_bad_values
    X, _, _ = _batch(Learner.unchecked_batch_values // 10, 10, 4)
    assert not model._skips_value_check(X)


#: Learners whose scores a finite row can overflow: without the unit-length scaling, whose
#: scale 0 for a row of infinite norm gives a score of 0 (the adaptive learners scale each
#: feature by its largest value seen, so a large row scores as a small one).
OVERFLOWING = [
    ("amlc", {"l2_normalize": False}),
    ("peer-share", {"l2_normalize": False}),
    ("rom-pgd", {}),
    ("omtl-logdet", {}),
]


@pytest.mark.parametrize(("name", "params"), OVERFLOWING)
def test_finite_rows_whose_scores_overflow_give_the_checked_numbers(
    name: str, params: dict[str, Any]
) -> None:
    """A batch of finite rows that drives a score to inf or NaN takes the checked pass
    again from the state before: the numbers are those of the checked pass alone."""
    X, y, tasks = _batch(1500, 10, 4, seed=3)
    X[700:] *= 1e300  # finite, and past what a product of doubles holds
    unchecked = learners.make(name, n_features=10, n_tasks=4, **params)
    unchecked.unchecked_batch_values = 0
    unchecked.score_and_learn_many(*_batch(300, 10, 4, seed=4))
    checked = learners.from_state_dict(unchecked.state_dict())
    checked.unchecked_batch_values = X.size + 1
    assert unchecked._skips_value_check(X) and not checked._skips_value_check(X)
    want = checked.score_and_learn_many(X, y, tasks)
    assert not np.isfinite(want).all()
    np.testing.assert_array_equal(unchecked.score_and_learn_many(X, y, tasks), want)
    assert_states_equal(checked.state_dict(), unchecked.state_dict(), "unchecked vs checked")


@pytest.mark.parametrize("name", ["rom-pgd", "omtl-logdet", "coml"])
def test_a_bad_value_in_a_batch_scaled_to_unit_length_is_an_error_and_no_warning(
    name: str,
) -> None:
    """The unit-length scaling of a row of infinite norm multiplies inf by 0 in numpy: the
    unchecked pass keeps numpy's warning to itself, and the checked run reports the value."""
    X, y, tasks = _batch(1500, 10, 4, seed=5)
    X[900, 3] = np.inf
    model = learners.make(name, n_features=10, n_tasks=4, l2_normalize=True)
    model.unchecked_batch_values = 0
    assert model._skips_value_check(X)
    before = model.state_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="NaN or infinite"):
            model.score_and_learn_many(X, y, tasks)
    assert_states_equal(before, model.state_dict(), "after the bad batch")
