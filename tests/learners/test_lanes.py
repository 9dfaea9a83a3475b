"""The lane vectors of learners/lanes.py: each operation against numpy, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from learners.lanes import (
    LANES,
    lanes_add,
    lanes_div,
    lanes_load,
    lanes_load_first,
    lanes_mul,
    lanes_splat,
    lanes_sqrt,
    lanes_store,
    lanes_store_first,
    lanes_where_nonzero,
    lanes_where_positive,
)

_F = 8


@njit
def _arithmetic(a: np.ndarray, b: np.ndarray, out: np.ndarray, s: float) -> None:
    x = lanes_load(a, 0)
    y = lanes_load(b, 0)
    lanes_store(out, 0 * _F, lanes_add(x, y))
    lanes_store(out, 8 * _F, lanes_mul(x, y))
    lanes_store(out, 16 * _F, lanes_div(x, y))
    lanes_store(out, 24 * _F, lanes_sqrt(x))
    lanes_store(out, 32 * _F, lanes_mul(x, lanes_splat(s)))
    lanes_store(out, 40 * _F, lanes_where_positive(y, x, lanes_splat(s)))
    lanes_store(out, 48 * _F, lanes_where_nonzero(y, x, lanes_splat(s)))


@njit
def _copy_first(src: np.ndarray, at: int, dst: np.ndarray, to: int, count: int) -> None:
    lanes_store_first(dst, to * _F, lanes_load_first(src, at * _F, count), count)


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(0.0, 1e6), min_size=LANES, max_size=LANES),
    st.lists(finite, min_size=LANES, max_size=LANES),
    finite,
)
def test_every_operation_is_the_element_wise_ieee_one(a: list, b: list, s: float) -> None:
    x, y = np.array(a), np.array(b)
    out = np.empty(7 * LANES)
    with np.errstate(all="ignore"):
        _arithmetic(x, y, out, s)
        want = [
            x + y,
            x * y,
            x / y,
            np.sqrt(x),
            x * s,
            np.where(y > 0, x, s),
            np.where(y != 0, x, s),
        ]
    for i, w in enumerate(want):
        np.testing.assert_array_equal(out[i * LANES : (i + 1) * LANES], w, err_msg=str(i))


def test_the_selects_take_the_second_value_on_nan() -> None:
    x = np.arange(1.0, 9.0)
    y = np.array([np.nan, 1.0, -1.0, 0.0, np.nan, 2.0, -0.0, 3.0])
    out = np.empty(7 * LANES)
    with np.errstate(all="ignore"):
        _arithmetic(x, y, out, -5.0)
    np.testing.assert_array_equal(out[40:48], [-5, 2, -5, -5, -5, 6, -5, 8])
    np.testing.assert_array_equal(out[48:56], [-5, 2, 3, -5, -5, 6, -5, 8])


@settings(max_examples=50, deadline=None)
@given(st.integers(0, LANES), st.integers(0, 4), st.integers(0, 4))
def test_a_masked_load_and_store_touch_the_first_lanes_only(count: int, at: int, to: int) -> None:
    src = np.arange(1.0, 13.0)
    dst = np.full(12, -1.0)
    _copy_first(src, at, dst, to, count)
    want = np.full(12, -1.0)
    want[to : to + count] = src[at : at + count]
    np.testing.assert_array_equal(dst, want)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 40), st.integers(1, 5000))
def test_the_grid_scratch_holds_the_rates_of_its_width(M: int, width: int) -> None:
    """The scores-and-scratch array of a grid pass (learners/adaptive/lanes_kernels.py):
    its size gives back the row width it was made for, and its last rate ends at its end."""
    from learners.adaptive.lanes_kernels import AK, lane_vector, padded, scratch_size, scratch_width

    size = scratch_size(M, width)
    assert scratch_width(M, size) == width
    M8 = padded(M)
    assert M8 % LANES == 0 and M <= M8 < M + LANES
    assert lane_vector(M, AK) + M8 + 2 * width * M8 == size
