"""Hyperparameter validators: the one place every learner takes them from.

A validator receives the user's value and returns the validated (possibly
converted) value, or raises ``ValueError`` (or ``TypeError``) with a message
that completes "invalid value for parameter 'x': ...". :class:`learners.base.Param`
holds one validator per hyperparameter.

* numbers: :func:`positive`, :func:`non_negative`, :func:`interval` (any open or
  closed bounds, e.g. probabilities and fractions), :func:`at_least`;
* integers: :func:`non_negative_int`, :func:`positive_int`, and
  :func:`strict_int` for arguments that must already be Python/numpy ints
  (shapes, seeds, task indices);
* :func:`boolean`, :func:`one_of` (choices), :func:`optional` (also ``None``),
  :func:`square_matrix`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "Validator",
    "at_least",
    "boolean",
    "int_between",
    "interval",
    "non_negative",
    "non_negative_int",
    "one_of",
    "optional",
    "positive",
    "positive_int",
    "square_matrix",
    "strict_int",
]

Validator = Callable[[Any], Any]


def interval(
    low: float, high: float, *, low_open: bool = False, high_open: bool = False
) -> Callable[[Any], float]:
    """A validator for a float in the interval from ``low`` to ``high``.

    The bounds are closed unless ``low_open`` / ``high_open``; an infinite bound
    still demands a finite value. ``interval(0, 1, low_open=True)`` is a
    probability in (0, 1].
    """
    text = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

    def check(v: Any) -> float:
        f = float(v)
        above = f > low if low_open else f >= low
        below = f < high if high_open else f <= high
        if not (math.isfinite(f) and above and below):
            raise ValueError(f"must lie in {text}, got {v!r}")
        return f

    return check


def at_least(low: float) -> Callable[[Any], float]:
    """A validator for a finite float >= ``low``."""

    def check(v: Any) -> float:
        f = float(v)
        if not math.isfinite(f) or f < low:
            raise ValueError(f"must be a finite number >= {low:g}, got {v!r}")
        return f

    return check


def positive(v: Any) -> float:
    """A finite float > 0."""
    f = float(v)
    if not math.isfinite(f) or f <= 0:
        raise ValueError(f"must be a finite number > 0, got {v!r}")
    return f


#: A finite float >= 0.
non_negative = at_least(0.0)


def _whole_number(v: Any, minimum: int, maximum: float = math.inf) -> int:
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        f = math.nan
    if isinstance(v, bool) or not math.isfinite(f) or f != int(f) or not minimum <= f <= maximum:
        bound = (
            f"an integer >= {minimum}"
            if maximum == math.inf
            else f"an integer in [{minimum}, {maximum:g}]"
        )
        raise ValueError(f"must be {bound}, got {v!r}")
    return int(f)


def non_negative_int(v: Any) -> int:
    """An integer >= 0 (also given as a whole float such as ``3.0``)."""
    return _whole_number(v, 0)


def positive_int(v: Any) -> int:
    """An integer >= 1 (also given as a whole float such as ``3.0``)."""
    return _whole_number(v, 1)


def int_between(low: int, high: int) -> Callable[[Any], int]:
    """A validator for an integer in ``[low, high]`` (also given as a whole float)."""

    def check(v: Any) -> int:
        return _whole_number(v, low, high)

    return check


def strict_int(value: Any, what: str, minimum: int) -> int:
    """``value`` as an int, which must already be a (non-bool) int >= ``minimum``.

    For shapes, seeds and indices, where a float or a string is a caller's bug.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        qualifier = {0: "non-negative", 1: "positive"}.get(minimum, f">= {minimum}")
        raise ValueError(f"{what} must be a {qualifier} integer, got {value!r}")
    return int(value)


def boolean(v: Any) -> bool:
    """A bool (also accepts 0/1 and 'true'/'false'/'yes'/'no')."""
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer) and int(v) in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.lower() in ("true", "false", "1", "0", "yes", "no"):
        return v.lower() in ("true", "1", "yes")
    raise ValueError(f"must be a boolean, got {v!r}")


def one_of(*choices: str) -> Callable[[Any], str]:
    """A validator accepting one of ``choices``."""

    def check(v: Any) -> str:
        if v not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}; got {v!r}")
        return str(v)

    return check


def optional(inner: Validator) -> Validator:
    """A validator that also accepts ``None``."""

    def check(v: Any) -> Any:
        return None if v is None else inner(v)

    return check


def square_matrix(v: Any) -> np.ndarray:
    """A square 2-D float matrix."""
    M = np.array(v, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"must be a square matrix, got shape {M.shape}")
    return M
