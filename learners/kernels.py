"""Shared compiled (numba) helpers of the learner kernels, and their warm-up.

Learner families compile their sequential test-then-train loops with numba
(``cache=True``, so a restarted process loads the machine code from the cache
instead of compiling again). This module holds what the families share:

* row arithmetic on a **row** given as ``(idx, val)``: a dense row is
  ``(NO_INDEX, x)`` (all ``d`` values), a sparse row the sorted indices of its
  non-zeros and their values, as in :class:`learners.inputs.Vec`;
* :func:`row_of`, the ``(idx, val)`` pair of a :class:`~learners.inputs.Vec`;
* :func:`register_warmup` / :func:`warm_kernels`: every family registers a
  function that runs its kernels once on tiny inputs, and a service calls
  :func:`warm_kernels` at start-up so no compilation happens inside a request.

**Summation order.** Inner products add term ``j`` (coordinate index ``j``) into
accumulator ``j mod 4`` and return ``(a0 + a1) + (a2 + a3)``. The order depends
only on the coordinates, so a dense row, the same row with explicit zeros and
its sparse form give bit-identical results (a zero term leaves an accumulator
unchanged), while the four independent accumulators let dense rows run four
multiply-adds per step. Results differ from numpy's BLAS dot only by rounding.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from numba import njit

from learners.inputs import Vec

__all__ = [
    "NO_INDEX",
    "axpy",
    "dot",
    "dot2",
    "dot_sqnorm",
    "register_warmup",
    "row_of",
    "warm_kernels",
]

#: The ``idx`` of a dense row: no index array, ``val`` holds every coordinate.
NO_INDEX = np.empty(0, dtype=np.int64)


def row_of(v: Vec) -> tuple[np.ndarray, np.ndarray]:
    """The kernel row ``(idx, val)`` of a canonical vector."""
    return (NO_INDEX if v.idx is None else v.idx), v.val


@njit(cache=True)
def _lane_sum(a0: float, a1: float, a2: float, a3: float) -> float:
    return (a0 + a1) + (a2 + a3)


@njit(cache=True)
def dot(w: np.ndarray, idx: np.ndarray, val: np.ndarray) -> float:
    """``<w, x>`` for the row ``x = (idx, val)`` (summation order: module docstring)."""
    a0 = a1 = a2 = a3 = 0.0
    if idx.shape[0] == 0:
        n = val.shape[0]
        m = n - n % 4
        for i in range(0, m, 4):
            a0 += w[i] * val[i]
            a1 += w[i + 1] * val[i + 1]
            a2 += w[i + 2] * val[i + 2]
            a3 += w[i + 3] * val[i + 3]
        for i in range(m, n):
            p = w[i] * val[i]
            lane = i - m
            if lane == 0:
                a0 += p
            elif lane == 1:
                a1 += p
            else:
                a2 += p
        return _lane_sum(a0, a1, a2, a3)
    for k in range(idx.shape[0]):
        j = idx[k]
        p = w[j] * val[k]
        lane = j & 3
        if lane == 0:
            a0 += p
        elif lane == 1:
            a1 += p
        elif lane == 2:
            a2 += p
        else:
            a3 += p
    return _lane_sum(a0, a1, a2, a3)


@njit(cache=True)
def dot2(u: np.ndarray, w: np.ndarray, idx: np.ndarray, val: np.ndarray) -> tuple[float, float]:
    """``(<u, x>, <w, x>)`` in one pass over the row, each exactly as :func:`dot` sums it."""
    a0 = a1 = a2 = a3 = 0.0
    b0 = b1 = b2 = b3 = 0.0
    if idx.shape[0] == 0:
        n = val.shape[0]
        m = n - n % 4
        for i in range(0, m, 4):
            a0 += u[i] * val[i]
            a1 += u[i + 1] * val[i + 1]
            a2 += u[i + 2] * val[i + 2]
            a3 += u[i + 3] * val[i + 3]
            b0 += w[i] * val[i]
            b1 += w[i + 1] * val[i + 1]
            b2 += w[i + 2] * val[i + 2]
            b3 += w[i + 3] * val[i + 3]
        for i in range(m, n):
            p = u[i] * val[i]
            q = w[i] * val[i]
            lane = i - m
            if lane == 0:
                a0 += p
                b0 += q
            elif lane == 1:
                a1 += p
                b1 += q
            else:
                a2 += p
                b2 += q
        return _lane_sum(a0, a1, a2, a3), _lane_sum(b0, b1, b2, b3)
    for k in range(idx.shape[0]):
        j = idx[k]
        p = u[j] * val[k]
        q = w[j] * val[k]
        lane = j & 3
        if lane == 0:
            a0 += p
            b0 += q
        elif lane == 1:
            a1 += p
            b1 += q
        elif lane == 2:
            a2 += p
            b2 += q
        else:
            a3 += p
            b3 += q
    return _lane_sum(a0, a1, a2, a3), _lane_sum(b0, b1, b2, b3)


@njit(cache=True)
def dot_sqnorm(w: np.ndarray, idx: np.ndarray, val: np.ndarray) -> tuple[float, float]:
    """``(<w, x>, ||x||^2)`` in one pass, each summed as :func:`dot` sums."""
    if idx.shape[0] == 0:
        return dot2(w, val, idx, val)
    a0 = a1 = a2 = a3 = 0.0
    b0 = b1 = b2 = b3 = 0.0
    for k in range(idx.shape[0]):
        j = idx[k]
        v = val[k]
        p = w[j] * v
        q = v * v
        lane = j & 3
        if lane == 0:
            a0 += p
            b0 += q
        elif lane == 1:
            a1 += p
            b1 += q
        elif lane == 2:
            a2 += p
            b2 += q
        else:
            a3 += p
            b3 += q
    return _lane_sum(a0, a1, a2, a3), _lane_sum(b0, b1, b2, b3)


@njit(cache=True)
def axpy(w: np.ndarray, scale: float, idx: np.ndarray, val: np.ndarray) -> None:
    """``w += scale * x`` in place for the row ``x = (idx, val)``: O(nnz)."""
    if idx.shape[0] == 0:
        for i in range(val.shape[0]):
            w[i] += scale * val[i]
    else:
        for k in range(idx.shape[0]):
            w[idx[k]] += scale * val[k]


_WARMUPS: list[Callable[[], None]] = []


def register_warmup(fn: Callable[[], None]) -> Callable[[], None]:
    """Decorator: ``fn`` runs a family's kernels once on tiny inputs (see :func:`warm_kernels`)."""
    _WARMUPS.append(fn)
    return fn


def warm_kernels() -> dict[str, float]:
    """Compile (or load from the cache) every learner kernel; returns seconds per family.

    Call once at process start-up: afterwards no learner call compiles. The first
    call on a machine compiles and fills numba's cache; later processes load it.
    """
    from learners.registry import discover

    discover()
    seconds: dict[str, float] = {}
    for fn in _WARMUPS:
        start = time.perf_counter()
        fn()
        seconds[f"{fn.__module__}.{fn.__qualname__}"] = time.perf_counter() - start
    return seconds
