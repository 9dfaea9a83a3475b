"""Compiled passes of AMLC's committee and PEER's peer queries over the adaptive learners.

The rules of :mod:`learners.active.committees` (docs/algorithms.md Sec. 11.6) read
the K per-task margins ``f_m = <u_0 + u_m, x>`` of the base's leader configuration
and hand every label to the base (``base._learn(x, y, k)``, the update of all M
configurations, :func:`learners.adaptive.reference.learn`). :func:`committee_pass`
(``amlc-adaptive``) and :func:`peer_rule_pass` (``peer-adaptive``,
``peer-share-adaptive``) run those rounds over a batch, row by row in the order of
the numpy reference (``_decision``, the budget and ``_query``, ``_learn``), with
the base's state updated in place by
:func:`learners.adaptive.kernels.learn_row`, the per-row step of the adaptive
learners' own pass:

* a row is loaded once (:func:`learners.active.kernels.load_row_inlined`, which applies
  ``append_bias`` / ``l2_normalize``) and put in the reference's canonical form
  (dense when it has no zero, else its non-zeros);
* the margins are those of the configuration that leads before the round, the
  shared part's dot computed once: O((K + 1) nnz(x));
* every learning of the round (the task's own label, the peers' answer, each
  shared label) is one :func:`~learners.adaptive.kernels.learn_row` on the same
  loaded row, in the reference's order: a shared label is learned after the
  task's, with the margins from before the round, and moves ``u_0``, the
  normaliser, ``stats`` and the mistake counts like any event of the base;
* the weights ``tau`` follow the helpers of :mod:`learners.amlc.kernels`
  (:func:`~learners.amlc.kernels._reweigh`, the committee's clipped hinge losses,
  PEER's :func:`~learners.amlc.kernels._peer_reweigh`);
* an active pass consumes the uniforms drawn ahead
  (:class:`learners.active.draws.Uniforms`) in the reference's order: one per
  round, PEER a second one after a first that asks; none once the budget is spent.

PEER reads the other K - 1 margins only on the rounds that need them (a mistake,
an active round whose first draw asks, every PEER+Share round that learns a label:
not a round that only scores, nor one whose first draw does not ask); they are the same
dots whenever they are computed. Sums may be reassociated, as in the other kernels:
scores and weights equal the reference's to rounding (1e-12 relative in the tests),
and the decisions (signs, queries, shares, the leader) are the reference's unless a
quantity lands on its threshold to the last bit: a pooled (b = 0) hinge configuration
steps a margin to exactly 1, so when a shared label has it learn the same row again,
whether ``z < 1`` holds there depends on rounding.

Each pass allocates its buffers (:func:`_buffers`) and hands them to one loop over
the rows (:func:`_committee_rows`, :func:`_peer_rows`) whose round logic is inlined
into it: a call per row that passes the base's fifteen arrays costs more than the
margins at d = 100. A round first decides (:func:`_committee_row`, :func:`_peer_row`:
the score, the queries, the rule's weights and the shared labels, all read off the
margins from before the round, which the base's learning does not change) and then
learns in one place (:func:`_learn_round`), so the base's row update is inlined once
per row form rather than once per place a round may learn. The loops are compiled
without reference counting (:data:`learners.kernels.ROW_HELPER`; they allocate nothing).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.active.kernels import KernelPass, load_row_inlined, warm_call, warm_rows
from learners.adaptive.kernels import (
    WARM_BASES,
    ConfigArrays,
    OutlierArrays,
    StateArrays,
    _all_nonzero,
    _dense_member_row,
    _dot,
    _nonzeros,
    dense_row,
    leader,
    learn_row,
    row_width,
    score_slots,
    warm_state,
)
from learners.amlc.kernels import _committee_shares, _hinge, _peer_reweigh, _reweigh
from learners.kernels import ROW_HELPER, register_warmup

__all__ = [
    "BaseArrays",
    "committee_pass",
    "peer_rule_margins",
    "peer_rule_pass",
    "warm",
]

#: The adaptive base as the kernels update it: its configurations, state and outlier parts
#: (:data:`~learners.adaptive.kernels.ConfigArrays`, ``StateArrays``, ``OutlierArrays``).
BaseArrays = tuple[ConfigArrays, StateArrays, OutlierArrays]

# Indices of the pass counters (one small array, updated by the row functions).
_DRAWN = 0
_REMAINING = 1
_ASKED = 2


@njit(**ROW_HELPER)
def _task_margins(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    U: np.ndarray,
    s0: float,
    f: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """``f_m = <u_m, x> + <u_0, x>`` for every task m, ``U`` the per-task weights of the
    leading configuration (the reference's ``task_margins``; ``s0`` is the shared part's
    dot). Four tasks at a time (:func:`_dots4`), the rest one by one. It takes the one
    array it reads, not the state: a call's arguments are every field of every array
    passed, and the state's eight arrays made ``amlc-adaptive`` 17% slower."""
    K = U.shape[0]
    m = 0
    while m + 4 <= K:
        _dots4(U, m, idx, val, n, s0, f)
        m += 4
    while m < K:
        f[m] = _dot(U[m], idx, val, n) + s0
        m += 1


@njit(fastmath={"reassoc"}, **ROW_HELPER)
def _dots4(
    U: np.ndarray,
    m: int,
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    s0: float,
    f: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """``f[m + r] = <U[m + r], x> + s0`` for r < 4 in one loop over the row: each entry of
    the row (and a sparse row's index) is read once for the four sums, which run side by
    side. Sums reassociated, as :func:`~learners.adaptive.kernels._dot` (rounding only)."""
    a, b, c, d = U[m], U[m + 1], U[m + 2], U[m + 3]
    s_a = s_b = s_c = s_d = 0.0
    for p in range(n):
        j = p if idx is None else idx[p]
        x = val[p]
        s_a += x * a[j]
        s_b += x * b[j]
        s_c += x * c[j]
        s_d += x * d[j]
    f[m] = s_a + s0
    f[m + 1] = s_b + s0
    f[m + 2] = s_c + s0
    f[m + 3] = s_d + s0


@njit(inline="always", **ROW_HELPER)
def _learn_task(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    i: int,
    call: KernelPass,
    k: int,
    y: float,
    base: BaseArrays,
    member: bool,
    scores: np.ndarray,
    buffers: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """The base learns ``(x, y, k)`` for row i of the call (loaded in ``val``). A member on
    a row in the dense form (a dense row without zeros, or a CSR row storing every
    feature, :func:`~learners.adaptive.kernels.dense_row`) that the call does not scale
    first takes the base's dense path (:func:`~learners.adaptive.kernels._dense_member_row`,
    the row read from the batch; it leaves ``val`` as loaded), unless the normaliser grows."""
    configs, state, outlier = base
    if idx is None and member and not call.normalize:
        loss, eta, b, r = configs[0][0], configs[1][0], configs[2][0], configs[3][0]
        if call.dense:
            x = call.X[i]
            score = _dense_member_row(x, call.bias, k, y, loss, eta, b, r, state, val, buffers)
        else:
            x64 = call.data[call.indptr[i] : call.indptr[i + 1]]
            score = _dense_member_row(x64, call.bias, k, y, loss, eta, b, r, state, val, buffers)
        if not math.isnan(score):
            return
    learn_row(idx, val, n, k, y, configs, state, outlier, member, scores, buffers)


@njit(inline="always", **ROW_HELPER)
def _learn_round(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    i: int,
    call: KernelPass,
    k: int,
    y: float,
    coef: np.ndarray,
    shares: bool,
    base: BaseArrays,
    member: bool,
    scores: np.ndarray,
    buffers: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """The learning of a round, in the reference's order: the base learns ``(x, y, k)``,
    then, with ``shares``, ``(x, coef_m, m)`` for every task m with ``coef_m != 0``, in
    task order. The one place a round learns: each call of :func:`_learn_task` inlines the
    base's whole row update, so the rules compile it once per row form, where a call for
    each place a round may learn (the task's label, the peers' answer, the shared labels)
    compiled it three or four times."""
    task, label, m = k, y, 0
    while True:
        _learn_task(idx, val, n, i, call, task, label, base, member, scores, buffers)
        if not shares:
            return
        while m < coef.shape[0] and coef[m] == 0.0:
            m += 1
        if m == coef.shape[0]:
            return
        task, label = m, coef[m]
        m += 1


@njit(inline="always", **ROW_HELPER)
def _committee_row(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    i: int,
    call: KernelPass,
    counters: np.ndarray,
    tau: np.ndarray,
    b: float,
    C: float,
    rtol: float,
    state: StateArrays,
    work: np.ndarray,
) -> bool:  # pragma: no cover - compiled
    """One ``amlc-adaptive`` round (``AdaptiveCommittee``: ``_decision``, ``_query``, and
    ``_learn`` up to the learning itself): the score, the query, and for a labelled row
    the committee's weights and the shared labels (``work[2]``, from the margins before
    the round, which the base's learning does not read). Returns whether the base learns
    the row's label and the shares (:func:`_learn_round`)."""
    k = call.tasks[i]
    label = call.y[i]
    f, losses, coef = work[0], work[1], work[2]
    lead = leader(state[6])
    _task_margins(idx, val, n, state[1][lead], _dot(state[0][lead], idx, val, n), f)
    p = 0.0
    for m in range(f.shape[0]):
        p += tau[k, m] * f[m]
    call.scores[i] = p
    if call.active:
        if counters[_REMAINING] <= 0:
            return False
        draw = call.u[counters[_DRAWN]]
        counters[_DRAWN] += 1
        if not draw < b / (b + abs(p)):
            return False
        counters[_REMAINING] -= 1
        counters[_ASKED] += 1
        call.queried[i] = True
    total = 0.0
    for m in range(f.shape[0]):
        losses[m] = _hinge(label, f[m], True)
        total += losses[m]
    factor = 1.0
    if total != 0.0:
        factor = 1.0 / _reweigh(tau, k, losses, C, total, -1)
    # the similar peers whose sign (SGN(0) = +1) differs from the label learn it too
    _committee_shares(tau, f, coef, k, factor, rtol, label, label, 1.0, False)
    return True


@njit(inline="always", **ROW_HELPER)
def _peer_row(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    i: int,
    call: KernelPass,
    counters: np.ndarray,
    tau: np.ndarray,
    b: float,
    bq: float,
    shares: bool,
    base: BaseArrays,
    work: np.ndarray,
) -> tuple[bool, float, bool]:  # pragma: no cover - compiled
    """One ``peer-adaptive`` / ``peer-share-adaptive`` round (``AdaptivePeer``) up to the
    learning itself: the score, the queries, the peer weights and the shared labels
    (``work[2]``), all from the margins before the round. Returns ``(learns, label,
    shares)``: whether the base learns, the label it learns for the row's task (the
    oracle's or the peers'), and whether shared labels follow (:func:`_learn_round`)."""
    state = base[1]
    K = tau.shape[0]
    k = call.tasks[i]
    f, losses, coef = work[0], work[1], work[2]
    lead = leader(state[6])
    score, fk, s0 = _peer_scores(idx, val, n, k, lead, state, base[2])
    call.scores[i] = score
    known = False  # the K margins: read where the round goes on to need them
    if call.active:
        if counters[_REMAINING] <= 0:
            return False, 0.0, False
        draw = call.u[counters[_DRAWN]]
        counters[_DRAWN] += 1
        if draw >= b / (b + abs(fk)):
            return False, 0.0, False
        _task_margins(idx, val, n, state[1][lead], s0, f)
        known = True
        peer = _vote(tau, k, f)
        draw = call.u[counters[_DRAWN]]
        counters[_DRAWN] += 1
        if not draw < bq / (bq + abs(peer)):
            return True, (1.0 if peer >= 0.0 else -1.0), False
        counters[_REMAINING] -= 1
        counters[_ASKED] += 1
        call.queried[i] = True
    label = call.y[i]
    mistake = (fk >= 0.0) != (label > 0.0)
    if not known and (shares or (mistake and K > 1)):
        _task_margins(idx, val, n, state[1][lead], s0, f)
    if mistake and K > 1:
        _peer_reweigh(tau, f, losses, label, k)
    if shares:
        for m in range(K):
            coef[m] = label if (m != k and label * f[m] <= 0.0) else 0.0
    return True, label, shares


@njit(inline="always", **ROW_HELPER)
def _peer_scores(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    k: int,
    lead: int,
    state: StateArrays,
    outlier: OutlierArrays,
) -> tuple[float, float, float]:  # pragma: no cover - compiled
    """``(score, f_k, <u_0, x>)`` of a loaded row of task k for the leading configuration
    ``lead``: the score is the base's decision, its outlier part included; ``f_k`` the
    task's margin ``<u_0 + u_k, x>`` the query rule reads."""
    s0 = _dot(state[0][lead], idx, val, n)
    sk = _dot(state[1][lead, k], idx, val, n)
    score = s0 + sk
    _, Q, Qs, _ = outlier
    if Q.shape[1] > 0:
        score += Qs[lead, k] * _dot(Q[lead, k], idx, val, n)
    return score, sk + s0, s0


@njit(inline="always", **ROW_HELPER)
def _vote(tau: np.ndarray, k: int, f: np.ndarray) -> float:  # pragma: no cover - compiled
    """The peers' vote ``f_peer = sum_m tau_km f_m`` (tau's diagonal is 0)."""
    peer = 0.0
    for m in range(tau.shape[0]):
        peer += tau[k, m] * f[m]
    return peer


@njit(**ROW_HELPER)
def _is_member(base: BaseArrays) -> bool:  # pragma: no cover - compiled
    """One configuration without an outlier part (:func:`~learners.adaptive.kernels.learn_row`)."""
    return base[1][0].shape[0] == 1 and base[2][0][0] == 0.0


@njit(**ROW_HELPER)
def _committee_rows(
    call: KernelPass,
    base: BaseArrays,
    tau: np.ndarray,
    b: float,
    C: float,
    rtol: float,
    idx: np.ndarray,
    val: np.ndarray,
    counters: np.ndarray,
    work: np.ndarray,
    scores: np.ndarray,
    buffers: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """The rounds of :func:`committee_pass`, each row in the reference's canonical form
    (dense rows in the sparse form on a state laid out by feature,
    :func:`~learners.adaptive.kernels.dense_row`)."""
    state = base[1]
    dim = state[0].shape[1]
    member = _is_member(base)
    coef = work[2]
    for i in range(call.y.shape[0]):
        k, label = call.tasks[i], call.y[i]
        n = load_row_inlined(call, i, dim, idx, val)
        if dense_row(call, i, state[0]) and _all_nonzero(val, n):
            if _committee_row(None, val, n, i, call, counters, tau, b, C, rtol, state, work):
                _learn_round(
                    None, val, n, i, call, k, label, coef, True, base, member, scores, buffers
                )
        else:
            n = _nonzeros(call.dense, idx, val, n)
            if _committee_row(idx, val, n, i, call, counters, tau, b, C, rtol, state, work):
                _learn_round(
                    idx, val, n, i, call, k, label, coef, True, base, member, scores, buffers
                )


@njit(**ROW_HELPER)
def _peer_rows(
    call: KernelPass,
    base: BaseArrays,
    tau: np.ndarray,
    b: float,
    bq: float,
    shares: bool,
    idx: np.ndarray,
    val: np.ndarray,
    counters: np.ndarray,
    work: np.ndarray,
    scores: np.ndarray,
    buffers: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """The rounds of :func:`peer_rule_pass`, each row in the reference's canonical form
    (as :func:`_committee_rows`)."""
    dim = base[1][0].shape[1]
    member = _is_member(base)
    coef = work[2]
    for i in range(call.y.shape[0]):
        k = call.tasks[i]
        n = load_row_inlined(call, i, dim, idx, val)
        if dense_row(call, i, base[1][0]) and _all_nonzero(val, n):
            learns, y, shared = _peer_row(
                None, val, n, i, call, counters, tau, b, bq, shares, base, work
            )
            if learns:
                _learn_round(
                    None, val, n, i, call, k, y, coef, shared, base, member, scores, buffers
                )
        else:
            n = _nonzeros(call.dense, idx, val, n)
            learns, y, shared = _peer_row(
                idx, val, n, i, call, counters, tau, b, bq, shares, base, work
            )
            if learns:
                _learn_round(
                    idx, val, n, i, call, k, y, coef, shared, base, member, scores, buffers
                )


@njit(cache=True)
def _buffers(
    call: KernelPass, base: BaseArrays, n_tasks: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The row buffers of a pass (``idx``, ``val``, the counters ``[draws, remaining,
    queries]``, the K-vectors ``f``, losses and coefficients, the M scores and the three
    row-length buffers of the base's step), as long as the longest row of the call."""
    state = base[1]
    width = max(row_width(call, state[0].shape[1]), 1)
    counters = np.array([0, call.remaining, 0], dtype=np.int64)
    return (
        np.empty(width, dtype=np.int64),
        np.empty(width),
        counters,
        np.empty((3, n_tasks)),
        np.empty(score_slots(state, width)),
        np.empty((3, width)),
    )


@njit(cache=True)
def committee_pass(
    call: KernelPass, base: BaseArrays, tau: np.ndarray, b: float, C: float, rtol: float
) -> tuple[int, int]:  # pragma: no cover - compiled
    """``amlc-adaptive`` rounds over ``call`` (xu2018 Alg. 1 over the adaptive base).

    Per row of task k: the leader's margins ``f``, the score ``p = tau_k . f``; an
    active pass asks when ``u < b / (b + |p|)``. A labelled row: the base learns
    ``(x, y, k)``; ``tau_km <- tau_km exp(-C l_km / lambda)`` renormalised to 1 with
    ``l_km = min(2, (1 - y f_m)_+)`` (skipped when ``lambda = 0``); every peer with
    ``tau_km >= tau_kk (1 - rtol)`` and ``SGN(f_m) != y`` has the base learn
    ``(x, y, m)``. Updates ``base`` and ``tau`` in place; fills ``call.scores`` and
    ``call.queried``; returns (draws, queries).
    """
    idx, val, counters, work, scores, buffers = _buffers(call, base, tau.shape[0])
    _committee_rows(call, base, tau, b, C, rtol, idx, val, counters, work, scores, buffers)
    return counters[_DRAWN], counters[_ASKED]


@njit(cache=True)
def peer_rule_pass(
    call: KernelPass, base: BaseArrays, tau: np.ndarray, b: float, bq: float, shares: bool
) -> tuple[int, int]:  # pragma: no cover - compiled
    """``peer-adaptive`` / ``peer-share-adaptive`` rounds over ``call`` (docs/algorithms.md
    Sec. 3.3-3.4 over the adaptive base).

    Per row of task k: the score is the base's decision; an active pass draws
    ``u < b / (b + |f_k|)``, then ``u' < bq / (bq + |f_peer|)`` with
    ``f_peer = tau_k . f``: the oracle is asked, or the base learns the peers' label
    ``(x, SGN(f_peer), k)``. A labelled row: the base learns ``(x, y, k)``; on
    ``SGN(f_k) != y`` the peer weights of row k are updated; with ``shares`` every
    peer with ``y f_m <= 0`` (margins from before the round) has the base learn
    ``(x, y, m)``. Updates ``base`` and ``tau`` in place; returns (draws, queries).
    """
    idx, val, counters, work, scores, buffers = _buffers(call, base, tau.shape[0])
    _peer_rows(call, base, tau, b, bq, shares, idx, val, counters, work, scores, buffers)
    return counters[_DRAWN], counters[_ASKED]


@njit(cache=True)
def peer_rule_margins(
    call: KernelPass, base: BaseArrays, tau: np.ndarray
) -> tuple[float, float, float]:  # pragma: no cover - compiled
    """``(score, f_k, f_peer)`` of the one row of ``call`` (task ``call.tasks[0]``): what
    :func:`peer_rule_pass` reads on that row, in the same canonical form, before its
    draws (the score; the task's margin, against which the first draw is made; the
    peers' vote, against which the second is). Changes nothing. The round of a single
    event whose draws Python takes from the generator one at a time reads these; where
    the peers answer, the base learns their label through its own pass on the row
    (:func:`learners.adaptive.kernels.adaptive_pass`, whose row step is the one a round
    of :func:`peer_rule_pass` takes: docs/algorithms.md Sec. 11.6)."""
    idx, val, _, work, _, _ = _buffers(call, base, tau.shape[0])
    U0 = base[1][0]
    n = load_row_inlined(call, 0, U0.shape[1], idx, val)
    k = call.tasks[0]
    if dense_row(call, 0, U0) and _all_nonzero(val, n):
        return _peer_margins(None, val, n, k, base, tau, work[0])
    n = _nonzeros(call.dense, idx, val, n)
    return _peer_margins(idx, val, n, k, base, tau, work[0])


@njit(inline="always", **ROW_HELPER)
def _peer_margins(
    idx: np.ndarray | None,
    val: np.ndarray,
    n: int,
    k: int,
    base: BaseArrays,
    tau: np.ndarray,
    f: np.ndarray,
) -> tuple[float, float, float]:  # pragma: no cover - compiled
    """:func:`peer_rule_margins` of a row loaded in its canonical form."""
    state = base[1]
    lead = leader(state[6])
    score, fk, s0 = _peer_scores(idx, val, n, k, lead, state, base[2])
    _task_margins(idx, val, n, state[1][lead], s0, f)
    return score, fk, _vote(tau, k, f)


def _warm_base(
    losses: list[int], gammas: list[float], interleave: bool, n_tasks: int, dim: int
) -> BaseArrays:
    """A fresh base of the given configurations (as ``AdaptiveLearner._init_state``)."""
    M = len(losses)
    return (
        (np.array(losses, dtype=np.int64), np.ones(M), np.ones(M), np.ones(M)),
        warm_state(M, n_tasks, dim, interleave),
        (
            np.array(gammas),
            np.zeros((M, n_tasks, dim)),
            np.ones((M, n_tasks)),
            np.zeros((M, n_tasks)),
        ),
    )


@register_warmup
def warm() -> None:
    """Compile both passes (dense and CSR rows, dimension 3 + bias) on tiny inputs, for
    each base of :data:`learners.adaptive.kernels.WARM_BASES`."""
    for rows in warm_rows():
        for losses, gammas, interleave in WARM_BASES:
            committee_pass(
                warm_call(rows, 1),
                _warm_base(losses, gammas, interleave, 2, 4),
                np.full((2, 2), 0.5),
                1.0,
                1.0,
                1e-9,
            )
            peer = np.array([[0.0, 1.0], [1.0, 0.0]])
            peer_rule_pass(
                warm_call(rows, 2),
                _warm_base(losses, gammas, interleave, 2, 4),
                peer,
                1.0,
                5.0,
                True,
            )
            base = _warm_base(losses, gammas, interleave, 2, 4)
            peer_rule_margins(warm_call(rows, 1), base, peer)
