"""Dense rows, task indices and labels through the checks of learners.inputs: the common
cases' short paths give what the general paths give, and refuse what they refuse."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from learners.inputs import as_vector, check_label, check_task
from learners.kernels import nonzeros_if_finite

values = st.one_of(
    st.just(0.0),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([np.nan, np.inf, -np.inf, 1e300, -1e300, 5e-324]),
)


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, st.integers(0, 40), elements=values))
def test_the_compiled_count_is_numpys_count_or_minus_one_for_a_bad_value(row: np.ndarray):
    want = int(np.count_nonzero(row)) if np.isfinite(row).all() else -1
    assert nonzeros_if_finite(row) == want


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, 12, elements=values), st.sampled_from(["C", "strided", "readonly"]))
def test_a_dense_row_of_any_layout_gives_the_canonical_vector_or_a_value_error(row, layout):
    """A strided or read-only row takes numpy's tests (the compiled count is compiled for
    C-contiguous writable rows only), with the same result."""
    if layout == "strided":
        x = np.repeat(row, 2)[::2]
    elif layout == "readonly":
        x = row.copy()
        x.flags.writeable = False
    else:
        x = row.copy()
    if not np.isfinite(row).all():
        with pytest.raises(ValueError, match="NaN or infinite"):
            as_vector(x, 12)
        return
    v = as_vector(x, 12)
    nz = np.flatnonzero(row)
    if nz.shape[0] == 12:
        assert v.idx is None
        assert np.array_equal(v.val, row)
        assert v.val is not x  # the caller's row is copied, never held
    else:
        assert np.array_equal(v.idx, nz)
        assert np.array_equal(v.val, row[nz])
    assert np.array_equal(v.dense(), row)


def test_values_whose_squares_overflow_are_finite_rows():
    row = np.array([1e200, -1e300, 0.0, 3.0])
    v = as_vector(row, 4)
    assert v.idx.tolist() == [0, 1, 3] and v.val.tolist() == [1e200, -1e300, 3.0]


def test_rows_of_other_layouts_compile_no_new_specialisation():
    as_vector(np.ones(3), 3)
    compiled = list(nonzeros_if_finite.signatures)
    read_only = np.ones(3)
    read_only.flags.writeable = False
    for x in (np.ones(6)[::2], read_only, np.ones(3, dtype=np.float32), np.ones(3, dtype=">f8")):
        assert as_vector(x, 3).val.tolist() == [1.0, 1.0, 1.0]
    assert list(nonzeros_if_finite.signatures) == compiled


def test_a_float32_row_is_converted_and_checked():
    x = np.array([1.5, 0.0, np.float32(np.inf)], dtype=np.float32)
    with pytest.raises(ValueError, match="NaN or infinite"):
        as_vector(x, 3)
    x[2] = 2.0
    v = as_vector(x, 3)
    assert v.val.dtype == np.float64 and v.idx.tolist() == [0, 2] and v.val.tolist() == [1.5, 2.0]


@pytest.mark.parametrize("task", [0, 3, np.int64(2), np.int32(1)])
def test_task_indices_in_range_are_returned_as_ints(task):
    got = check_task(task, 4)
    assert type(got) is int and got == int(task)


@pytest.mark.parametrize("task", [-1, 4, True, False, 1.0, "1", None, 2**70])
def test_task_indices_out_of_range_or_not_integers_are_refused(task):
    with pytest.raises(ValueError, match="task"):
        check_task(task, 4)


@pytest.mark.parametrize(
    ("y", "kind", "want"),
    [
        (1, "classification", 1.0),
        (-1.0, "classification", -1.0),
        (np.float64(1.0), "classification", 1.0),
        (np.int8(-1), "classification", -1.0),
        (3, "regression", 3.0),
        (10**300, "regression", 1e300),
        (-2.5, "regression", -2.5),
        (np.float32(0.5), "regression", 0.5),
    ],
)
def test_labels_are_returned_as_floats(y, kind, want):
    got = check_label(y, kind)
    assert type(got) is float and got == want


@pytest.mark.parametrize(
    ("y", "kind"),
    [
        (True, "classification"),
        (0, "classification"),
        (0.5, "classification"),
        (np.nan, "classification"),
        (2, "classification"),
        (True, "regression"),
        (np.nan, "regression"),
        (np.inf, "regression"),
        (-np.inf, "regression"),
        ("1", "regression"),
        (10**400, "regression"),
        (None, "classification"),
    ],
)
def test_bad_labels_are_refused(y, kind):
    with pytest.raises(ValueError, match=r"label|target"):
        check_label(y, kind)
