"""Compiled entries of the AMLC and PEER rules' single events over an adaptive base.

The learning calls of ``amlc-adaptive``, ``peer-adaptive`` and ``peer-share-adaptive``
on one event (``score_and_learn_one``, ``learn_one``, and a labelled batch of one dense
row, the worker's call for a single labelled event) ran the rules' batch passes on a
one-row batch that Python put together, with the base's fifteen arrays typed by numba on
entry: 14-18 us per event at K = 10, d = 100. :func:`committee_event` and
:func:`peer_rule_event` take a dense float64 row as it came with the rule's and the base's
arrays, check it and build the call of one row in compiled code
(:func:`~learners.active.kernels.event_row_taken`,
:func:`~learners.active.kernels.dense_event_call`, as for :mod:`learners.amlc.event_kernels`),
then run :func:`~learners.active.adaptive_kernels.committee_pass` /
:func:`~learners.active.adaptive_kernels.peer_rule_pass` on it: the numbers of the general
path and of a batch, bit for bit (docs/algorithms.md Sec. 11.6). The same entries with
``learn`` off score a single event (``decision_one``).

A PEER rule's query of a single event draws its uniforms from the generator one at a
time, the second only where the first asked: :func:`peer_rule_margins_event` reads the
score, the task's margin and the peers' vote of the row, the rule draws against them
in Python, and where the peers answer, the base learns their label through its own
entry (:func:`learners.adaptive.event_kernels.adaptive_event`, the row step that a round
of the rule's pass takes, so the numbers of ``query_and_learn_many``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from learners.active.adaptive_kernels import (
    BaseArrays,
    _warm_base,
    committee_pass,
    peer_rule_margins,
    peer_rule_pass,
)
from learners.active.kernels import dense_event_call, event_row_taken
from learners.adaptive.kernels import WARM_BASES
from learners.kernels import register_warmup

__all__ = [
    "committee_event",
    "peer_rule_event",
    "peer_rule_margins_event",
    "warm",
]


@njit(cache=True)
def committee_event(
    x: np.ndarray,
    as_batch: bool,
    bias: bool,
    normalize: bool,
    task: int,
    label: float,
    learn: bool,
    base: BaseArrays,
    *params: Any,
) -> float:  # pragma: no cover - compiled
    """``amlc-adaptive``'s round on the dense row ``x``; returns the pass's score, or NaN,
    having changed nothing, for a row the entry does not take (an entry not finite, or,
    unless ``as_batch``, a zero entry). ``base`` and ``params`` are the arguments of
    :func:`~learners.active.adaptive_kernels.committee_pass` after its call."""
    if not event_row_taken(x, not as_batch):
        return math.nan
    call = dense_event_call(x, bias, normalize, task, label, learn)
    committee_pass(call, base, *params)
    return call.scores[0]


@njit(cache=True)
def peer_rule_event(
    x: np.ndarray,
    as_batch: bool,
    bias: bool,
    normalize: bool,
    task: int,
    label: float,
    learn: bool,
    base: BaseArrays,
    *params: Any,
) -> float:  # pragma: no cover - compiled
    """``peer-adaptive``'s (``peer-share-adaptive``'s) round on the dense row ``x``, as
    :func:`committee_event`, with the arguments of
    :func:`~learners.active.adaptive_kernels.peer_rule_pass`."""
    if not event_row_taken(x, not as_batch):
        return math.nan
    call = dense_event_call(x, bias, normalize, task, label, learn)
    peer_rule_pass(call, base, *params)
    return call.scores[0]


@njit(cache=True)
def peer_rule_margins_event(
    x: np.ndarray, bias: bool, normalize: bool, task: int, base: BaseArrays, tau: np.ndarray
) -> tuple[float, float, float]:  # pragma: no cover - compiled
    """:func:`~learners.active.adaptive_kernels.peer_rule_margins` of the dense row ``x``
    (the score, the task's margin and the peers' vote of a PEER round), or three NaN,
    having changed nothing, for a row :func:`peer_rule_event` would not take per event."""
    if not event_row_taken(x, True):
        return math.nan, math.nan, math.nan
    return peer_rule_margins(dense_event_call(x, bias, normalize, task, 0.0, False), base, tau)


@register_warmup
def warm() -> None:
    """Compile both entries for each base of :data:`learners.adaptive.kernels.WARM_BASES`
    (dimension 3 + bias), learning and scoring, per event and as a batch of one row."""
    x = np.array([0.5, -1.0, 2.0])
    peer = np.array([[0.0, 1.0], [1.0, 0.0]])
    for losses, gammas, interleave in WARM_BASES:
        for learn in (True, False):
            for as_batch in (True, False):
                base = _warm_base(losses, gammas, interleave, 2, 4)
                args = (x, as_batch, True, False, 1, -1.0, learn, base)
                committee_event(*args, np.full((2, 2), 0.5), 1.0, 1.0, 1e-9)
                peer_rule_event(*args, peer, 1.0, 5.0, True)
        base = _warm_base(losses, gammas, interleave, 2, 4)
        peer_rule_margins_event(x, True, False, 1, base, peer)
