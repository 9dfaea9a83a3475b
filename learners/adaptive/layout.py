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

:func:`interleave_for` chooses, from the learners' ``memory_order`` parameter: by
feature (``features``), C order (``rows``), or with ``auto`` (the default) by feature
for rows of at least :data:`INTERLEAVE_MIN_FEATURES` entries (bias included), the width
from which rows are sparse in practice (text, hashed features), else C order; a model
of wide dense rows (embeddings) wants ``rows``. The choice depends on the width and the
parameter only, so a learner restored from its state, or replayed, runs the same loops
as the one that was saved.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "INTERLEAVE_MIN_FEATURES",
    "MEMORY_ORDERS",
    "config_pair",
    "in_layout",
    "interleave_for",
    "is_interleaved",
]

#: Rows at least this wide (D, the bias included) get the order by feature.
INTERLEAVE_MIN_FEATURES = 16_384


#: The values of the learners' ``memory_order`` parameter.
MEMORY_ORDERS = ("auto", "rows", "features")


def interleave_for(dim: int, memory_order: str = "auto") -> bool:
    """Whether a learner on rows of ``dim`` entries (bias included) lays its state out by
    feature: with ``memory_order`` ``"features"``, never with ``"rows"``, and with
    ``"auto"`` from :data:`INTERLEAVE_MIN_FEATURES` entries on."""
    if memory_order != "auto":
        return memory_order == "features"
    return dim >= INTERLEAVE_MIN_FEATURES


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
