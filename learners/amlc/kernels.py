"""Compiled sequential passes of AMLC and PEER (xu2018; Murugesan & Carbonell 2017).

Each kernel processes a whole batch row by row in the order of the row-by-row
reference (the numpy ``_decision`` / ``_query`` / ``_learn`` of
:mod:`learners.amlc.amlc` and :mod:`learners.amlc.peer`), at a cost linear in
the batch: O(K nnz(x)) for the K margins of a row, O(K) for its committee or
peer-weight row, O(K nnz(x)) for the shared updates. A *labelled* pass
(``active=False``, the test-then-train path of ``score_and_learn_many``) learns
every row; an *active* pass (``active=True``, ``query_and_learn_many``) first
makes the query decision of ``query_one`` with the uniforms ``u`` drawn ahead
(:class:`learners.active.draws.Uniforms`), consuming them in the reference's
order, and learns the queried rows only. No draw is made once the budget
(``remaining`` queries) is spent. ``random-query`` and ``independent`` run on
:func:`learners.active.kernels.selective_pass`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.active.kernels import (
    KernelPass,
    load_row,
    row_axpy,
    row_buffers,
    row_margins,
    warm_call,
    warm_rows,
)
from learners.kernels import register_warmup

__all__ = ["amlc_pass", "peer_pass", "warm"]


@njit(cache=True)
def amlc_pass(
    W: np.ndarray,
    tau: np.ndarray,
    call: KernelPass,
    b: float,
    C: float,
    row_sum: float,
    tie: float,
    clip: bool,
    share_label: bool,
    rtol: float,
) -> tuple[int, int]:  # pragma: no cover - compiled
    """AMLC rounds (xu2018 Alg. 1; see :class:`learners.amlc.ActiveMultitaskCommittees`).

    Per row of task k: ``f = W x``; score ``p = tau_k . f`` (lines 5-6); active pass:
    ask when ``u < b / (b + |p|)`` (line 8). Learning (lines 10-16): ``w_k += y x`` when
    ``SGN(p) != y`` (``SGN(0) = tie``); ``tau_km <- tau_km exp(-C l_km / lambda)``
    renormalised to ``row_sum`` (skipped when ``lambda = 0``; losses clipped at 2 when
    ``clip``); every peer m with ``tau_km >= tau_kk (1 - rtol)`` whose sign (ties to
    ``tie``) differs from y (``share_label``) or from ``y_hat`` gets ``w_m += y x``.
    Returns (draws, queries); fills ``call.scores`` and ``call.queried``.
    """
    dense = call.dense
    remaining = call.remaining
    n = call.y.shape[0]
    K = W.shape[0]
    f = np.empty(K)
    losses = np.empty(K)
    coef = np.empty(K)
    idx, val = row_buffers(W)
    drawn = 0
    asked = 0
    for i in range(n):
        nx = load_row(call, i, W.shape[1], idx, val)
        k = call.tasks[i]
        row_margins(W, f, dense, idx, val, nx)
        p = 0.0
        for m in range(K):
            p += tau[k, m] * f[m]
        call.scores[i] = p
        if call.active:
            if remaining <= 0:
                continue
            draw = call.u[drawn]
            drawn += 1
            if not draw < b / (b + abs(p)):
                continue
            remaining -= 1
            asked += 1
            call.queried[i] = True
        label = call.y[i]
        y_hat = 1.0 if p > 0.0 else (-1.0 if p < 0.0 else tie)
        total = 0.0
        for m in range(K):
            loss = max(0.0, 1.0 - label * f[m])
            if clip:
                loss = min(loss, 2.0)
            losses[m] = loss
            total += loss
        if total != 0.0:
            scaled_sum = 0.0
            for m in range(K):
                tau[k, m] = tau[k, m] * math.exp(-C * (losses[m] / total))
                scaled_sum += tau[k, m]
            factor = row_sum / scaled_sum
            for m in range(K):
                tau[k, m] = tau[k, m] * factor
        target = label if share_label else y_hat
        own = tau[k, k] * (1.0 - rtol)
        for m in range(K):
            coef[m] = 0.0
            if m == k:
                if y_hat != label:
                    coef[m] = label
                continue
            sign = 1.0 if f[m] > 0.0 else (-1.0 if f[m] < 0.0 else tie)
            if sign != target and tau[k, m] >= own:
                coef[m] = label
        for m in range(K):
            if coef[m] != 0.0:
                row_axpy(W[m], coef[m], dense, idx, val, nx)
    return drawn, asked


@njit(cache=True)
def peer_pass(
    W: np.ndarray,
    tau: np.ndarray,
    call: KernelPass,
    b: float,
    bq: float,
    shares: bool,
) -> tuple[int, int]:  # pragma: no cover - compiled
    """PEER / PEER+Share rounds (docs/algorithms.md Sec. 3.3-3.4; see :class:`learners.amlc.PeerLearning`).

    Per row of task k: ``f = W x``; score ``f_k``. Active pass: ``P`` when
    ``u < b / (b + |f_k|)``; then ``f_peer = tau_k . f`` and ``Q`` when
    ``u' < bq / (bq + |f_peer|)``: the oracle is asked; without Q the task trains on the
    peers' label, ``w_k += SGN(f_peer) x``. Learning an oracle label: on
    ``SGN(f_k) != y``, ``w_k += y x`` and the peer weights of row k become
    ``tau_km exp(-l_km / lambda)`` over ``m != k`` renormalised (``lambda`` the peers'
    loss sum, 1 when 0); with ``shares``, every peer with ``y f_m <= 0`` gets ``w_m += y x``
    (margins from before the round). Returns (draws, queries).
    """
    dense = call.dense
    remaining = call.remaining
    n = call.y.shape[0]
    K = W.shape[0]
    f = np.empty(K)
    idx, val = row_buffers(W)
    drawn = 0
    asked = 0
    for i in range(n):
        nx = load_row(call, i, W.shape[1], idx, val)
        k = call.tasks[i]
        row_margins(W, f, dense, idx, val, nx)
        fk = f[k]
        call.scores[i] = fk
        if call.active:
            if remaining <= 0:
                continue
            draw = call.u[drawn]
            drawn += 1
            if draw >= b / (b + abs(fk)):
                continue
            peer = 0.0
            for m in range(K):
                peer += tau[k, m] * f[m]
            draw = call.u[drawn]
            drawn += 1
            if not draw < bq / (bq + abs(peer)):
                row_axpy(W[k], 1.0 if peer >= 0.0 else -1.0, dense, idx, val, nx)
                continue
            remaining -= 1
            asked += 1
            call.queried[i] = True
        label = call.y[i]
        if (fk >= 0.0) != (label > 0.0):
            row_axpy(W[k], label, dense, idx, val, nx)
            if K > 1:
                total = 0.0
                for m in range(K):
                    if m != k:
                        total += max(0.0, 1.0 - label * f[m])
                lam = total if total != 0.0 else 1.0
                scaled_sum = 0.0
                for m in range(K):
                    if m != k:
                        tau[k, m] = tau[k, m] * math.exp(-max(0.0, 1.0 - label * f[m]) / lam)
                        scaled_sum += tau[k, m]
                for m in range(K):
                    if m != k:
                        tau[k, m] = tau[k, m] / scaled_sum
        if shares:
            for m in range(K):
                if m != k and label * f[m] <= 0.0:
                    row_axpy(W[m], label, dense, idx, val, nx)
    return drawn, asked


@register_warmup
def warm() -> None:
    """Compile this module's kernels (dense and CSR rows) on tiny inputs."""
    for rows in warm_rows():
        amlc_pass(
            np.zeros((2, 4)),
            np.full((2, 2), 0.5),
            warm_call(rows, 1),
            1.0,
            1.0,
            1.0,
            1.0,
            False,
            True,
            1e-9,
        )
        peer = np.array([[0.0, 1.0], [1.0, 0.0]])
        peer_pass(np.zeros((2, 4)), peer, warm_call(rows, 2), 1.0, 5.0, True)
