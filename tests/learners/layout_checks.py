"""The scenarios shared by the memory-order tests (``rom-pgd``, ``coml``): a learner laid
out by feature against the same learner by row, through batches, a batch of one row, a
new task, a state round trip and the per-event calls, bit for bit; and the order ``auto``
chooses by the width of the rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from learners.base import Learner
from learners.memory_order import INTERLEAVE_MIN_FEATURES


def assert_same_state(a: Learner, b: Learner, fields: Sequence[str]) -> None:
    """The named state arrays of ``a`` and ``b`` hold the same values."""
    for name in fields:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def assert_orders_agree(
    rows: Learner,
    features: Learner,
    stream: tuple[Any, np.ndarray, np.ndarray],
    sparse: bool,
    fields: Sequence[str],
    laid_out_by_feature: Callable[[Any], bool],
) -> Learner:
    """Run ``rows`` and ``features`` (fresh, K tasks) over the 900 events of ``stream``
    ``(X, y, tasks)``, requiring the same scores at every step and the same ``fields`` at
    the end; a task is added after 600 events, and a learner restored from ``features``'s
    state runs the rest beside them. Returns the restored learner."""
    X, y, tasks = stream
    K = rows.n_tasks
    assert not laid_out_by_feature(rows) and laid_out_by_feature(features)
    for lo, hi in ((0, 300), (300, 301), (301, 600)):
        np.testing.assert_array_equal(
            rows.score_and_learn_many(X[lo:hi], y[lo:hi], tasks[lo:hi]),
            features.score_and_learn_many(X[lo:hi], y[lo:hi], tasks[lo:hi]),
        )
    assert_same_state(rows, features, fields)
    # a new task and a state round trip keep the order and the numbers
    assert rows.add_task() == features.add_task() == K
    restored = type(features).from_state_dict(features.state_dict())
    assert laid_out_by_feature(features) and laid_out_by_feature(restored)
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
    assert_same_state(rows, features, fields)
    assert_same_state(rows, restored, fields)
    return restored


def assert_auto_chooses_by_width(
    make: Callable[..., Any],
    by_feature: Callable[[Any], bool],
    laid_out_by_feature: Callable[[Any], bool],
) -> None:
    """``memory_order="auto"`` lays ``make(d, K, order, **params)``'s state out by feature
    from INTERLEAVE_MIN_FEATURES entries on, the bias included, and ``"rows"`` never does;
    ``by_feature`` reads the learner's own answer. An unknown order is refused."""
    narrow = make(INTERLEAVE_MIN_FEATURES - 1, 2, "auto")
    wide = make(INTERLEAVE_MIN_FEATURES, 2, "auto")
    wide_with_bias = make(INTERLEAVE_MIN_FEATURES - 1, 2, "auto", append_bias=True)
    assert not by_feature(narrow) and not laid_out_by_feature(narrow)
    assert by_feature(wide) and laid_out_by_feature(wide)
    assert by_feature(wide_with_bias) and laid_out_by_feature(wide_with_bias)
    assert not by_feature(make(INTERLEAVE_MIN_FEATURES, 2, "rows"))
    with pytest.raises(ValueError, match="memory_order"):
        make(10, 2, "columns")
