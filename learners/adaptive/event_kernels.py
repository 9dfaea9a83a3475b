"""Compiled entries of the adaptive learners' per-event calls (docs/algorithms.md Sec. 11.5).

``decision_one`` and ``score_and_learn_one`` gave an event the numbers of a batch by
running the batch passes on a one-row batch that Python put together (the canonical
vector, the rows, the call, the learner's arrays): 6-8 us at d = 100, of which the row's
own work is a few hundred nanoseconds. :func:`adaptive_event` takes a dense row as it came,
:func:`adaptive_sparse_event` a sparse row's canonical vector, with the learner's arrays;
each checks the row finite and hands it to those same passes (the row loops of
:func:`~learners.adaptive.kernels.adaptive_pass` and
:func:`~learners.adaptive.kernels.adaptive_scores`) as a call of one row, built here with
the array types of a batch's call and its buffers. The passes put a dense row in the
canonical form themselves (a row with a zero entry in its sparse form, as
:func:`learners.inputs.as_vector` does), so an event gives the numbers of the same row in
a batch, bit for bit, and no new version of the passes is compiled.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from learners.active.kernels import KernelPass, event_row_taken
from learners.adaptive.kernels import (
    WARM_BASES,
    ConfigArrays,
    OutlierArrays,
    StateArrays,
    _pass_rows,
    _score_rows,
    score_slots,
    warm_state,
)
from learners.kernels import register_warmup

__all__ = ["adaptive_event", "adaptive_sparse_event", "warm"]


@njit(cache=True)
def adaptive_event(
    x: np.ndarray,
    bias: bool,
    normalize: bool,
    task: int,
    label: float,
    learn: bool,
    as_batch: bool,
    configs: ConfigArrays,
    state: StateArrays,
    outlier: OutlierArrays,
) -> float:  # pragma: no cover - compiled
    """The leader's score of the dense float64 row ``x`` for ``task``, as the batch passes
    give it; with ``learn``, the row is then learned with ``label`` (``score_and_learn_one``),
    else nothing changes (``decision_one``). ``bias`` / ``normalize``: the pass appends the
    constant 1 / scales the row to unit length, as for a batch (docs/algorithms.md Sec. 0).
    Returns NaN, having changed nothing, when some entry of ``x`` is not finite, and, unless
    ``as_batch``, when ``normalize`` and some entry is 0: the per-event calls give the
    numbers of the row's canonical vector, which holds such a row in its sparse form,
    whose norm sums the non-zero entries alone, where the dense row's (``as_batch``: the
    row of a dense batch) sums its zeros too: the same norm, not always to the bit."""
    if not event_row_taken(x, normalize and not as_batch):
        return np.nan
    # one float and one integer buffer hold what a pass allocates for itself
    # (learners.adaptive.kernels._row_buffers): 4 allocations instead of 10, 0.4 us
    dim = state[0].shape[1]
    width = max(dim, 1)
    floats = np.empty(2 + 4 * width + score_slots(state, width))
    ints = np.empty(1 + width, dtype=np.int64)
    floats[0] = label
    ints[0] = task
    y, scores, val = floats[0:1], floats[1:2], floats[2 : 2 + width]
    buffers = floats[2 + width : 2 + 4 * width].reshape((3, width))
    call = KernelPass(
        True,
        x.reshape((1, x.shape[0])),
        ints[0:0],
        ints[0:0],
        floats[0:0],
        bias,
        normalize,
        y,
        ints[0:1],
        False,
        floats[0:0],
        0,
        scores,
        np.empty(0, dtype=np.bool_),
    )
    row_buffers = (ints[1:], val, buffers, floats[2 + 4 * width :])
    if learn:
        _pass_rows(call, configs, state, outlier, row_buffers)
    else:
        _score_rows(call, state, outlier, row_buffers)
    return scores[0]


@njit(cache=True)
def adaptive_sparse_event(
    idx: np.ndarray,
    val: np.ndarray,
    bias: bool,
    normalize: bool,
    task: int,
    label: float,
    learn: bool,
    configs: ConfigArrays,
    state: StateArrays,
    outlier: OutlierArrays,
) -> float:  # pragma: no cover - compiled
    """:func:`adaptive_event` for a row in its sparse canonical form: the sorted, distinct
    feature indices ``idx`` (int64) of its non-zero values ``val`` (float64), as
    :func:`learners.inputs.as_vector` gives them, handed to the passes as a CSR call of one
    row (the types of a CSR batch's call). Returns NaN, having changed nothing, when some
    value is not finite."""
    total = 0.0
    for p in range(val.shape[0]):  # 0 for finite values, NaN otherwise (learners.kernels)
        total += val[p] - val[p]
    if total != 0.0:
        return np.nan
    width = max(val.shape[0] + (1 if bias else 0), 1)
    floats = np.empty(2 + 4 * width + score_slots(state, width))
    ints = np.empty(3 + width, dtype=np.int64)
    floats[0] = label
    ints[0] = task
    ints[1] = 0
    ints[2] = val.shape[0]
    scores = floats[1:2]
    call = KernelPass(
        False,
        np.empty((0, 0)),
        ints[1:3],
        idx,
        val,
        bias,
        normalize,
        floats[0:1],
        ints[0:1],
        False,
        floats[0:0],
        0,
        scores,
        np.empty(0, dtype=np.bool_),
    )
    row_buffers = (
        ints[3:],
        floats[2 : 2 + width],
        floats[2 + width : 2 + 4 * width].reshape((3, width)),
        floats[2 + 4 * width :],
    )
    if learn:
        _pass_rows(call, configs, state, outlier, row_buffers)
    else:
        _score_rows(call, state, outlier, row_buffers)
    return scores[0]


@register_warmup
def warm() -> None:
    """Compile :func:`adaptive_event` and :func:`adaptive_sparse_event` for each of
    :data:`~learners.adaptive.kernels.WARM_BASES` (dimension 3 + bias), learning and
    scoring."""
    x = np.array([0.5, -1.0, 2.0])
    for losses, gammas, interleave in WARM_BASES:
        M = len(losses)
        state = warm_state(M, 2, 4, interleave)
        outlier = (np.array(gammas), np.zeros((M, 2, 4)), np.ones((M, 2)), np.zeros((M, 2)))
        configs = (np.array(losses, dtype=np.int64), np.ones(M), np.ones(M), np.ones(M))
        idx = np.array([0, 2], dtype=np.int64)
        for learn in (True, False):
            adaptive_event(x, True, False, 1, -1.0, learn, False, configs, state, outlier)
            adaptive_sparse_event(idx, x[:2], True, False, 1, -1.0, learn, configs, state, outlier)
