"""Memory order of an adaptive learner's weights and accumulators (docs/algorithms.md Sec. 11.4).

The arrays ``U0_``, ``G0_`` (logical shape (M, D)) and ``U_``, ``G_`` (M, K, D) hold
one value per configuration m, (task k) and feature j. Their logical shapes never
change; their memory order does:

* **by configuration** (C order, the default): each configuration's weights of a
  task are contiguous, so the loops over a dense row run along memory and
  vectorise;
* **by feature** (interleaved): one buffer per part, physically (D, 2, M) for the
  shared part and (K, D, 2, M) for the task parts, of which ``U0_``/``G0_`` and
  ``U_``/``G_`` are strided views: for feature j (of task k) the M weights lie side
  by side, then the M accumulators. A sparse row then reads, per non-zero and part,
  the one to four cache lines that hold every configuration's weight and
  accumulator, instead of 2 M lines megabytes apart. On a wide model, whose state is
  far larger than the caches, those reads are the cost of a row.

Measured on the sparse stream (K = 10, d = 100,000, about 100 non-zeros per row;
``python -m bench.perf.checkouts``, docs/algorithms.md Sec. 11.4): ``adaptive`` (14
configurations) and ``adaptive-auto`` (two views of 8) learn about three times as
many events per second by feature, the members 1.0-1.25 times. A member's sparse loops
add in the same order whatever the strides, so its scores and weights are those of C
order bit for bit; a grid by feature runs in lanes (:mod:`learners.adaptive.lanes_kernels`,
another 1.4-1.5 times), equal to C order to rounding. A dense row is read by strided loops that do not vectorise: 3.5 times
slower at d = 1,000.

Which order a learner takes is :func:`learners.memory_order.interleave_for`'s choice
(re-exported here).
"""

from __future__ import annotations

import numpy as np

from learners.memory_order import INTERLEAVE_MIN_FEATURES, MEMORY_ORDERS, interleave_for

__all__ = [
    "INTERLEAVE_MIN_FEATURES",
    "MEMORY_ORDERS",
    "config_pair",
    "in_layout",
    "kept_pair",
    "interleave_for",
    "is_interleaved",
]


def is_interleaved(a: np.ndarray) -> bool:
    """Whether the (M, D) or (M, K, D) array ``a`` is laid out by feature (configurations
    innermost, a weight and an accumulator array sharing one buffer)."""
    return a.strides[0] == a.itemsize and a.strides[-1] == 2 * a.shape[0] * a.itemsize


def _back(ndim: int) -> tuple[int, ...]:
    """The axes that show a physical (..., M) array as (M, ...)."""
    return (ndim - 1, *range(ndim - 1))


def _empty_pair(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Two arrays of logical ``shape`` (M, ...), views of one buffer laid out by feature."""
    physical = np.empty((*shape[1:], 2, shape[0]))
    back = _back(len(shape))
    return physical[..., 0, :].transpose(back), physical[..., 1, :].transpose(back)


def config_pair(
    shape: tuple[int, ...], u_fill: np.ndarray, g_fill: np.ndarray, interleave: bool
) -> tuple[np.ndarray, np.ndarray]:
    """New weight and accumulator arrays of logical ``shape`` (M, ...) in the requested
    order, configuration m's entries equal to ``u_fill[m]`` and ``g_fill[m]`` (every page
    written, so that no learning call pays for touching it first)."""
    if interleave:
        u, g = _empty_pair(shape)
    else:
        u, g = np.empty(shape), np.empty(shape)
    column = (-1,) + (1,) * (len(shape) - 1)
    u[...] = u_fill.reshape(column)
    g[...] = g_fill.reshape(column)
    return u, g


#: Rows of the (features x 2, M) view a packing copies at a time (a few MB of scratch).
PACK_ROWS = 1 << 16


def kept_pair(
    u: np.ndarray, g: np.ndarray, keep: np.ndarray, interleave: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The configurations ``keep`` (a mask over the first axis) of the pair ``u``, ``g``,
    packed at the front of the memory they already use, in their order: no new memory is
    touched. A copy into new arrays spent most of its time on the first touch of that
    memory (0.32 of 0.55 s on the 40,000-event sparse stream of the benchmark, where it
    made pruning slower than the whole grid); the process keeps the grid's memory until
    the learner is next restored (docs/algorithms.md Sec. 11.9)."""
    if interleave and _packed_by_feature(u, g):
        return _pack_by_feature(u, g, keep)
    if not interleave and u.flags.c_contiguous and g.flags.c_contiguous:
        return _pack_rows(u, keep), _pack_rows(g, keep)
    return in_layout(u[keep], g[keep], interleave)


def _pack_rows(a: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The rows ``keep`` of the C-ordered ``a`` moved to its front, in order (each to a row
    at or before its own, so no row is overwritten before it is read); a view of them."""
    kept = np.flatnonzero(keep)
    for new, old in enumerate(kept.tolist()):
        if new != old:
            a[new] = a[old]
    return a[: kept.shape[0]]


def _packed_by_feature(u: np.ndarray, g: np.ndarray) -> bool:
    """Whether ``u`` and ``g`` are the pair of a buffer laid out by feature whose front they
    fill: ``(..., 2, M)`` packed from the first entry of the array owning the memory."""
    owner = u.base
    if owner is None or owner is not g.base or not owner.flags.c_contiguous:
        return False
    start = owner.__array_interface__["data"][0]
    return (
        is_interleaved(u)
        and is_interleaved(g)
        and u.__array_interface__["data"][0] == start
        and g.__array_interface__["data"][0] == start + u.shape[0] * u.itemsize
        and 2 * u.size <= owner.size
    )


def _pack_by_feature(
    u: np.ndarray, g: np.ndarray, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`kept_pair` of a pair laid out by feature: the (rows, M) view of its buffer
    rewritten as (rows, M') at the same start, a block of rows at a time. Block ``[r0,
    r1)`` is read into scratch before it is written to ``[r0 M', r1 M')``, which ends
    before the first entry not read yet, ``r1 M``."""
    M, M2 = u.shape[0], int(np.count_nonzero(keep))
    owner = u.base
    assert owner is not None  # _packed_by_feature
    flat = owner.reshape(-1)
    rows = u.size * 2 // M
    old = flat[: rows * M].reshape(rows, M)
    new = flat[: rows * M2].reshape(rows, M2)
    for r0 in range(0, rows, PACK_ROWS):
        r1 = min(rows, r0 + PACK_ROWS)
        new[r0:r1] = np.compress(keep, old[r0:r1], axis=1)
    physical = new.reshape(*u.shape[1:], 2, M2)
    back = _back(u.ndim)
    return physical[..., 0, :].transpose(back), physical[..., 1, :].transpose(back)


def in_layout(u: np.ndarray, g: np.ndarray, interleave: bool) -> tuple[np.ndarray, np.ndarray]:
    """The weights ``u`` and accumulators ``g`` (logical shape (M, D) or (M, K, D)) in the
    requested order: themselves when they already are, else copies."""
    if not interleave:
        return np.ascontiguousarray(u), np.ascontiguousarray(g)
    if is_interleaved(u) and is_interleaved(g) and u.base is not None and u.base is g.base:
        return u, g
    pu, pg = _empty_pair(u.shape)
    pu[...] = u
    pg[...] = g
    return pu, pg
