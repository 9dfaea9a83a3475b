"""Compiled entries of AMLC's and PEER's per-event calls (docs/algorithms.md Sec. 3.5).

``decision_one``, ``score_and_learn_one`` (and ``decide_and_query``, which scores through
``decision_one``'s path) ran the batch pass on a one-row batch that Python put together:
the canonical vector (:func:`learners.inputs.as_vector`), the call
(:class:`~learners.active.kernels.KernelPass`), its buffers, and numba's typing of that
call at every entry, 8-9 us at K = 10, d = 100, of which the round's own work is a few
hundred nanoseconds. :func:`amlc_event` and :func:`peer_event` take a dense float64 row as
it came, with the learner's arrays: each checks the row, builds the call of one row in
compiled code (:func:`~learners.active.kernels.dense_event_call`, with the array types of
a dense batch's call, so the passes compiled for batches serve it) and runs
:func:`~learners.amlc.kernels.amlc_pass` / :func:`~learners.amlc.kernels.peer_pass` on it.
The row gives the numbers it gives in a batch, bit for bit.

The same entries serve a labelled batch of one dense row (``as_batch``: how the worker
hands over a single event, :meth:`learners.active.rounds.ActiveLearner._one_row_batch`).
A row with an entry that is not finite is not taken, nor, for a per-event call, a row
that the canonical vector holds in its sparse form (one with a zero entry; a dense
batch holds it dense): the entries return NaN, having changed nothing, and the caller
takes the general path (which raises for the former). A row they took may score NaN too
(weights that overflowed); the caller tells the two apart by the row
(:meth:`learners.active.rounds.ActiveLearner._entry_score`).

A PEER query draws twice at most, and the second draw only after the first asked the
peers, so its per-event query cannot take its draws ahead as a batch does
(:class:`~learners.active.draws.Uniforms`). The first draw is made in Python against the
score :func:`peer_event` gave; where it asks, the second is drawn and
:func:`peer_query_event` does the rest of the round on the same row
(:func:`~learners.amlc.kernels.peer_second_draw`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from learners.active.kernels import dense_event_call, event_row_taken
from learners.amlc.kernels import amlc_pass, peer_pass, peer_second_draw
from learners.kernels import register_warmup

__all__ = ["amlc_event", "peer_event", "peer_query_event", "warm"]


@njit(cache=True)
def amlc_event(
    x: np.ndarray,
    as_batch: bool,
    bias: bool,
    normalize: bool,
    task: int,
    label: float,
    learn: bool,
    W: np.ndarray,
    tau: np.ndarray,
    *params: Any,
) -> float:  # pragma: no cover - compiled
    """AMLC's round on the dense row ``x`` (the call of
    :func:`~learners.active.kernels.dense_event_call`); returns its committee score, or
    NaN, having changed nothing, for a row the entry does not take: one with an entry
    that is not finite, or, unless ``as_batch`` (a batch of one row), with a zero
    entry (module docstring). ``W``, ``tau`` and ``params`` are the arguments of
    :func:`~learners.amlc.kernels.amlc_pass` before and after its call."""
    if not event_row_taken(x, not as_batch):
        return math.nan
    call = dense_event_call(x, bias, normalize, task, label, learn)
    amlc_pass(W, tau, call, *params)
    return call.scores[0]


@njit(cache=True)
def peer_event(
    x: np.ndarray,
    as_batch: bool,
    bias: bool,
    normalize: bool,
    task: int,
    label: float,
    learn: bool,
    W: np.ndarray,
    tau: np.ndarray,
    *params: Any,
) -> float:  # pragma: no cover - compiled
    """PEER's (PEER+Share's) round on the dense row ``x``, as :func:`amlc_event`, with the
    arguments of :func:`~learners.amlc.kernels.peer_pass`."""
    if not event_row_taken(x, not as_batch):
        return math.nan
    call = dense_event_call(x, bias, normalize, task, label, learn)
    peer_pass(W, tau, call, *params)
    return call.scores[0]


@njit(cache=True)
def peer_query_event(
    x: np.ndarray,
    bias: bool,
    normalize: bool,
    task: int,
    u: float,
    W: np.ndarray,
    tau: np.ndarray,
    bq: float,
) -> bool:  # pragma: no cover - compiled
    """:func:`~learners.amlc.kernels.peer_second_draw` on the dense row ``x``, one that
    :func:`peer_event` took: the rest of a PEER round whose first draw asked the peers."""
    return peer_second_draw(W, tau, dense_event_call(x, bias, normalize, task, 0.0, False), u, bq)


@register_warmup
def warm() -> None:
    """Compile both entries, learning and scoring, per event and as a batch of one row."""
    x = np.array([0.5, -1.0, 2.0])
    W = np.zeros((2, 4))
    tau = np.full((2, 2), 1.0)
    peer = np.array([[0.0, 1.0], [1.0, 0.0]])
    for learn in (True, False):
        for as_batch in (True, False):
            args = (x, as_batch, True, True, 1, -1.0, learn, W)
            amlc_event(*args, tau, 1.0, 1.0, 2.0, -1.0, True, True, 1e-9)
            peer_event(*args, peer, 1.0, 5.0, True)
    for u in (0.0, 0.9):  # the oracle asked; the peers answer
        peer_query_event(x, True, True, 1, u, W, peer, 5.0)
