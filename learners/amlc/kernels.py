"""Compiled sequential passes of AMLC and PEER (xu2018; Murugesan & Carbonell 2017).

Each kernel processes a whole batch row by row in the order of the row-by-row
reference (the numpy ``_decision`` / ``_query`` / ``_learn`` of
:mod:`learners.amlc.amlc` and :mod:`learners.amlc.peer`), at a cost linear in
the batch. A *labelled* pass (``active=False``, the test-then-train path of
``score_and_learn_many``) learns every row; an *active* pass (``active=True``,
``query_and_learn_many``) first makes the query decision of ``query_one`` with
the uniforms ``u`` drawn ahead (:class:`learners.active.draws.Uniforms`),
consuming them in the reference's order, and learns the queried rows only. No
draw is made once the budget (``remaining`` queries) is spent. ``random-query``
and ``independent`` run on :func:`learners.active.kernels.selective_pass`.

Cost per row. AMLC: the K margins, which every round needs (the committee score
and the committee update read them all): O(nnz(x)) per run of bit-equal rows of W
(below), O(K nnz(x)) when the rows differ; O(K) for its committee row, O(nnz(x))
per updated or shared run of bit-equal rows. PEER: O(nnz(x)) for the task's own
margin; the other K - 1 margins only on the rounds that read them: a mistake (the
peer-weight update), an active round whose first draw asks (the peers' score) and
every PEER+Share round that learns a label (the sharing test); a round that only
scores (an active round with no query left, as ``decision_one`` runs it) reads the
task's own margin alone. Every margin is the same dot whenever it is computed (W
does not change in between), so the results are those of computing all K every
round.

The exponential weights ``tau_km exp(-c l_km)`` (xu2018 Alg. 1, line 12) skip
``exp`` where it is exact to: a zero loss gives the factor ``exp(-0) = 1``, and a
loss equal to the previous one reuses its factor (equal arguments give equal
results). Equal losses are common: the authors' code clips them at 2, and under
label sharing the rows of W often stay equal, so all K margins are.

Equal rows of W. Under AMLC's sharing by the label (the authors' code), rows of W
that start equal get the same updates, and with W = 0 at the start all K rows stay
equal (docs/algorithms.md Sec. 3.5): the K margins are one margin K times, and a
mistake round's K updates one update K times. A pass over a large enough batch
therefore finds the runs of bit-equal consecutive rows (:func:`_equal_row_classes`),
computes one margin per run, updates the run's first row alone, and splits a run
when its rows get different coefficients (:func:`_class_updates`); the other rows
take their class's values when the pass ends (:func:`_materialise_classes`). Equal
bits through the same dot give equal margins, and through the same update equal
rows, so the results are those of K dots and K updates. PEER+Share is tracked the
same way: an erring peer and an erring task get the same step, so its rows split
only on a margin of exactly 0 (from W = 0, two distinct rows remain).

The helpers are compiled without reference counting
(:data:`learners.kernels.ROW_HELPER`): they allocate nothing.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.active.kernels import (
    KernelPass,
    _axpy_dense,
    _axpy_sparse,
    _copy_row,
    _dot_dense,
    _dot_sparse,
    load_row,
    row_axpy,
    row_buffers,
    row_dot,
    warm_call,
    warm_rows,
)
from learners.amlc.committee import LOG_SPACE_RATES_ABOVE
from learners.kernels import ROW_HELPER, ROW_KERNEL, register_warmup

__all__ = ["amlc_pass", "peer_pass", "peer_second_draw", "warm"]


@njit(**ROW_HELPER)
def _sign(v: float, tie: float) -> float:  # pragma: no cover - compiled
    """``SGN(v)`` with ``SGN(0) = tie``."""
    return 1.0 if v > 0.0 else (-1.0 if v < 0.0 else tie)


@njit(**ROW_HELPER)
def _hinge(label: float, margin: float, clip: bool) -> float:  # pragma: no cover - compiled
    """The committee loss ``(1 - y f_m)_+``, clipped at 2 with ``clip`` (xu2018 Alg. 1, line 12)."""
    loss = max(0.0, 1.0 - label * margin)
    return min(loss, 2.0) if clip else loss


@njit(**ROW_HELPER)
def _committee_scores(
    W: np.ndarray,
    same: np.ndarray,
    tau: np.ndarray,
    k: int,
    f: np.ndarray,
    losses: np.ndarray,
    label: float,
    clip: bool,
    dense: bool,
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
) -> tuple[float, float]:  # pragma: no cover - compiled
    """Fill ``f = W x`` and the losses :func:`_hinge` of a loaded row.

    Returns the committee score ``p = tau_k . f`` (xu2018 Alg. 1, lines 5-6) and the
    loss sum ``lambda``, each summed in task order. The two sums ride along the
    margins (one pass over m), so their serial additions overlap the products.
    A row of W that is bit-equal to an earlier one (``same[m] < m``, see
    :func:`_equal_row_classes`) takes that row's margin instead of recomputing it.
    One loop per row form, as :func:`~learners.active.kernels.row_margins`.
    """
    p = 0.0
    total = 0.0
    if dense:
        for m in range(W.shape[0]):
            fm = _dot_dense(W[m], val, n) if same[m] == m else f[same[m]]
            f[m] = fm
            p += tau[k, m] * fm
            losses[m] = _hinge(label, fm, clip)
            total += losses[m]
    else:
        for m in range(W.shape[0]):
            fm = _dot_sparse(W[m], idx, val, n) if same[m] == m else f[same[m]]
            f[m] = fm
            p += tau[k, m] * fm
            losses[m] = _hinge(label, fm, clip)
            total += losses[m]
    return p, total


@njit(**ROW_HELPER)
def _bit_equal(a: np.ndarray, b: np.ndarray) -> bool:  # pragma: no cover - compiled
    """Whether two int64 views of float rows hold the same bits (one branch-free pass)."""
    differ = False
    for j in range(a.shape[0]):
        differ |= a[j] != b[j]
    return not differ


@njit(**ROW_HELPER)
def _equal_row_classes(bits: np.ndarray, same: np.ndarray, track: bool) -> None:  # pragma: no cover
    """``same[m]``: the first row of the run of bit-equal consecutive rows holding m.

    ``bits`` is W viewed as int64. Without ``track`` every row stands alone. Equal
    bits give equal margins through the same dot, so a row in a run can take the
    margin of the run's first row (:func:`_committee_scores`).
    """
    for m in range(same.shape[0]):
        same[m] = m
        if track and m > 0 and _bit_equal(bits[m], bits[m - 1]):
            same[m] = same[m - 1]


@njit(**ROW_HELPER)
def _class_updates(
    W: np.ndarray,
    same: np.ndarray,
    split: np.ndarray,
    coef: np.ndarray,
    dense: bool,
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
) -> None:  # pragma: no cover - compiled
    """``w_m += coef_m x`` for every row, applied to the first row of each class alone.

    Only the first row of a class of bit-equal rows (``same``) is kept up to date in
    W during a pass; the others take its values when the pass ends
    (:func:`_materialise_classes`). Rows of a class stay bit-equal when they get the
    same coefficient; the rows whose coefficient differs from their first row's form a
    new class, led by the first of them, whose row of W is first given the values the
    class held before this update (coefficients are 0 or y, so a class splits in two at
    most). Each row then gets the one update it would get on its own, so W at the end
    of the pass is bit for bit that of K separate updates.
    """
    for m in range(same.shape[0]):
        split[m] = -1
    for m in range(same.shape[0]):
        first = same[m]
        if first != m and coef[m] != coef[first]:
            if split[first] < 0:
                split[first] = m
                _copy_row(W[m], W, first)
            same[m] = split[first]
    if dense:
        for m in range(W.shape[0]):
            if same[m] == m and coef[m] != 0.0:
                _axpy_dense(W[m], coef[m], val, n)
    else:
        for m in range(W.shape[0]):
            if same[m] == m and coef[m] != 0.0:
                _axpy_sparse(W[m], coef[m], idx, val, n)


@njit(**ROW_HELPER)
def _materialise_classes(W: np.ndarray, same: np.ndarray) -> None:  # pragma: no cover
    """Give every row of W its class's values (:func:`_class_updates`) at the end of a pass:
    O(d) per row that is not the first of its class, which a tracked pass's rows
    (:func:`_worth_tracking`) cost at least eight times over."""
    for m in range(W.shape[0]):
        if same[m] != m:
            _copy_row(W[m], W, same[m])


@njit(**ROW_HELPER)
def _class_margins(
    W: np.ndarray,
    same: np.ndarray,
    f: np.ndarray,
    dense: bool,
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
) -> None:  # pragma: no cover - compiled
    """``f = W x``, one dot per class of bit-equal rows (``same``, :func:`_equal_row_classes`)."""
    if dense:
        for m in range(W.shape[0]):
            f[m] = _dot_dense(W[m], val, n) if same[m] == m else f[same[m]]
    else:
        for m in range(W.shape[0]):
            f[m] = _dot_sparse(W[m], idx, val, n) if same[m] == m else f[same[m]]


@njit(**ROW_HELPER)
def _own_update(coef: np.ndarray, k: int, step: float) -> None:  # pragma: no cover - compiled
    """Coefficients of an update of row k alone (for :func:`_class_updates`)."""
    for m in range(coef.shape[0]):
        coef[m] = 0.0
    coef[k] = step


@njit(**ROW_HELPER)
def _exp_weights(
    tau: np.ndarray, k: int, losses: np.ndarray, rate: float, lam: float, skip: int
) -> float:  # pragma: no cover - compiled
    """``tau_km <- tau_km exp(-rate l_km / lam)`` over ``m != skip``; returns the new sum.

    ``exp`` runs only for a non-zero loss that differs from the previous non-zero one
    (module docstring): the results are those of calling it for every m, provided
    ``rate`` and ``lam`` are finite (the caller's :func:`_reweigh` checks).
    """
    last_loss = 0.0
    last_factor = 1.0
    total = 0.0
    for m in range(tau.shape[1]):
        if m == skip:
            continue
        loss = losses[m]
        if loss != 0.0:
            if loss != last_loss:
                last_loss = loss
                last_factor = math.exp(-rate * (loss / lam))
            tau[k, m] = tau[k, m] * last_factor
        total += tau[k, m]
    return total


@njit(**ROW_KERNEL)
def _exp_weights_plain(
    tau: np.ndarray, k: int, losses: np.ndarray, rate: float, lam: float, skip: int
) -> float:  # pragma: no cover - compiled
    """:func:`_exp_weights` with ``exp`` for every m (for non-finite ``rate`` or ``lam``)."""
    total = 0.0
    for m in range(tau.shape[1]):
        if m == skip:
            continue
        tau[k, m] = tau[k, m] * math.exp(-rate * (losses[m] / lam))
        total += tau[k, m]
    return total


@njit(**ROW_KERNEL)
def _exp_weights_log(
    tau: np.ndarray, k: int, losses: np.ndarray, rate: float, lam: float, skip: int
) -> float:  # pragma: no cover - compiled
    """:func:`_exp_weights` for rates above ``LOG_SPACE_RATES_ABOVE``, in log space: the
    positive weights become ``exp(log tau_km - rate l_km / lam - top)``, ``top`` the
    largest exponent over ``m != skip`` (the same row once renormalised; its largest
    weight is 1, so it cannot underflow to 0), as
    :func:`learners.amlc.committee.committee_update` computes them."""
    top = -math.inf
    for m in range(tau.shape[1]):
        if m != skip and tau[k, m] > 0.0:
            top = max(top, math.log(tau[k, m]) - rate * (losses[m] / lam))
    total = 0.0
    for m in range(tau.shape[1]):
        if m != skip:
            if tau[k, m] > 0.0:
                tau[k, m] = math.exp(math.log(tau[k, m]) - rate * (losses[m] / lam) - top)
            total += tau[k, m]
    return total


@njit(**ROW_KERNEL)
def _reweigh(
    tau: np.ndarray, k: int, losses: np.ndarray, rate: float, lam: float, skip: int
) -> float:  # pragma: no cover - compiled
    """The exponential-weights step of xu2018 Alg. 1, line 12, on row k, unnormalised; returns
    the row's sum over ``m != skip``. Rates above ``LOG_SPACE_RATES_ABOVE`` take the log-space
    form (:func:`_exp_weights_log`), where a row's weights could otherwise all underflow
    to 0 and its renormalisation divide by 0."""
    if not (math.isfinite(rate) and math.isfinite(lam)):
        return _exp_weights_plain(tau, k, losses, rate, lam, skip)
    if rate > LOG_SPACE_RATES_ABOVE:
        return _exp_weights_log(tau, k, losses, rate, lam, skip)
    return _exp_weights(tau, k, losses, rate, lam, skip)


@njit(**ROW_HELPER)
def _committee_shares(
    tau: np.ndarray,
    f: np.ndarray,
    coef: np.ndarray,
    k: int,
    factor: float,
    rtol: float,
    label: float,
    target: float,
    tie: float,
    own_mistake: bool,
) -> None:  # pragma: no cover - compiled
    """Scale row k of ``tau`` by ``factor`` (the renormalisation) and fill the update coefficients.

    ``coef[k] = y`` on the task's own mistake; ``coef[m] = y`` for every peer with
    ``tau_km >= tau_kk (1 - rtol)`` (the renormalised weights) whose sign (ties to
    ``tie``) differs from ``target`` (xu2018 Alg. 1, lines 14-16); 0 elsewhere.
    """
    own = (tau[k, k] * factor) * (1.0 - rtol)
    for m in range(tau.shape[1]):
        weight = tau[k, m] * factor
        tau[k, m] = weight
        coef[m] = 0.0
        if m == k:
            if own_mistake:
                coef[m] = label
        elif _sign(f[m], tie) != target and weight >= own:
            coef[m] = label


@njit(**ROW_HELPER)
def _worth_tracking(call: KernelPass, dim: int) -> bool:  # pragma: no cover - compiled
    """Whether a pass finds the runs of equal rows of W (one read of W, O(K d)): when its
    rows hold at least 8 d values in all, so the read costs at most 1/8 of the K margins."""
    if call.dense:
        return call.X.shape[0] * call.X.shape[1] >= 8 * dim
    return call.indptr[call.indptr.shape[0] - 1] >= 8 * dim


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
    K = W.shape[0]
    f = np.empty(K)
    losses = np.empty(K)
    coef = np.empty(K)
    same = np.empty(K, dtype=np.int64)
    split = np.empty(K, dtype=np.int64)
    _equal_row_classes(W.view(np.int64), same, _worth_tracking(call, W.shape[1]))
    idx, val = row_buffers(W)
    drawn = 0
    asked = 0
    for i in range(call.y.shape[0]):
        nx = load_row(call, i, W.shape[1], idx, val)
        k = call.tasks[i]
        label = call.y[i]
        p, total = _committee_scores(W, same, tau, k, f, losses, label, clip, dense, idx, val, nx)
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
        y_hat = _sign(p, tie)
        factor = 1.0
        if total != 0.0:
            factor = row_sum / _reweigh(tau, k, losses, C, total, -1)
        target = label if share_label else y_hat
        _committee_shares(tau, f, coef, k, factor, rtol, label, target, tie, y_hat != label)
        _class_updates(W, same, split, coef, dense, idx, val, nx)
    _materialise_classes(W, same)
    return drawn, asked


@njit(**ROW_HELPER)
def _peer_reweigh(
    tau: np.ndarray, f: np.ndarray, losses: np.ndarray, label: float, k: int
) -> None:  # pragma: no cover - compiled
    """PEER's peer-weight step over ``m != k`` (docs/algorithms.md Sec. 3.3).

    ``tau_km <- tau_km exp(-l_km / lambda)`` with the hinge losses ``l_km`` of the
    margins ``f`` and ``lambda`` their sum (1 when 0), renormalised to sum 1.
    """
    total = 0.0
    for m in range(tau.shape[1]):
        loss = max(0.0, 1.0 - label * f[m])
        losses[m] = loss
        if m != k:
            total += loss
    lam = total if total != 0.0 else 1.0
    scaled_sum = _reweigh(tau, k, losses, 1.0, lam, k)
    for m in range(tau.shape[1]):
        if m != k:
            tau[k, m] = tau[k, m] / scaled_sum


@njit(**ROW_HELPER)
def _peer_share_coefs(
    f: np.ndarray, coef: np.ndarray, label: float, k: int, own_step: bool
) -> None:  # pragma: no cover - compiled
    """PEER+Share's coefficients: ``w_m += y x`` for every peer ``m != k`` with
    ``y f_m <= 0``, and for task k when it erred (``own_step``); 0 elsewhere."""
    for m in range(coef.shape[0]):
        coef[m] = label if (m != k and label * f[m] <= 0.0) else 0.0
    if own_step:
        coef[k] = label


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
    (margins from before the round). The peers' margins are computed only on the
    rounds that read them (module docstring). Returns (draws, queries).
    """
    dense = call.dense
    remaining = call.remaining
    K = W.shape[0]
    f = np.empty(K)
    losses = np.empty(K)
    coef = np.empty(K)
    same = np.empty(K, dtype=np.int64)
    split = np.empty(K, dtype=np.int64)
    track = shares and _worth_tracking(call, W.shape[1])
    _equal_row_classes(W.view(np.int64), same, track)
    idx, val = row_buffers(W)
    drawn = 0
    asked = 0
    for i in range(call.y.shape[0]):
        nx = load_row(call, i, W.shape[1], idx, val)
        k = call.tasks[i]
        peers_known = False  # the other margins: read below where a round needs them
        fk = row_dot(W[same[k]], dense, idx, val, nx)
        call.scores[i] = fk
        if call.active:
            if remaining <= 0:
                continue
            draw = call.u[drawn]
            drawn += 1
            if draw >= b / (b + abs(fk)):
                continue
            peer = _peer_vote(W, tau, same, f, k, dense, idx, val, nx)
            peers_known = True
            draw = call.u[drawn]
            drawn += 1
            if not draw < bq / (bq + abs(peer)):
                _own_update(coef, k, _peers_label(peer))
                _class_updates(W, same, split, coef, dense, idx, val, nx)
                continue
            remaining -= 1
            asked += 1
            call.queried[i] = True
        label = call.y[i]
        mistake = (fk >= 0.0) != (label > 0.0)
        if not peers_known and (shares or (mistake and K > 1)):
            _class_margins(W, same, f, dense, idx, val, nx)
        if mistake and K > 1:
            _peer_reweigh(tau, f, losses, label, k)
        if shares:
            _peer_share_coefs(f, coef, label, k, mistake)
            _class_updates(W, same, split, coef, dense, idx, val, nx)
        elif mistake:
            row_axpy(W[k], label, dense, idx, val, nx)
    _materialise_classes(W, same)
    return drawn, asked


@njit(**ROW_HELPER)
def _peer_vote(
    W: np.ndarray,
    tau: np.ndarray,
    same: np.ndarray,
    f: np.ndarray,
    k: int,
    dense: bool,
    idx: np.ndarray,
    val: np.ndarray,
    n: int,
) -> float:  # pragma: no cover - compiled
    """The peers' vote on a loaded row of task k: ``f = W x`` (:func:`_class_margins`),
    then ``f_peer = sum_m tau_km f_m`` (tau's diagonal is 0)."""
    _class_margins(W, same, f, dense, idx, val, n)
    peer = 0.0
    for m in range(W.shape[0]):
        peer += tau[k, m] * f[m]
    return peer


@njit(**ROW_HELPER)
def _peers_label(peer: float) -> float:  # pragma: no cover - compiled
    """The peers' label ``SGN(f_peer)`` (``SGN(0) = +1``), which task k trains on when the
    oracle is not asked: ``w_k += SGN(f_peer) x``."""
    return 1.0 if peer >= 0.0 else -1.0


@njit(cache=True)
def peer_second_draw(
    W: np.ndarray, tau: np.ndarray, call: KernelPass, u: float, bq: float
) -> bool:  # pragma: no cover - compiled
    """The rest of a PEER round on the one row of ``call`` (of task ``call.tasks[0]``)
    after its first draw asked the peers: their vote ``f_peer``, then ``Q`` when
    ``u < bq / (bq + |f_peer|)`` (returns True: the oracle is asked, nothing changes);
    otherwise the task trains on the peers' label, ``w_k += SGN(f_peer) x`` (returns
    False). :func:`peer_pass`'s arithmetic on that row, for a per-event query whose
    draws Python takes from the generator one at a time (docs/algorithms.md Sec. 3.5)."""
    K = W.shape[0]
    idx, val = row_buffers(W)
    n = load_row(call, 0, W.shape[1], idx, val)
    same = np.empty(K, dtype=np.int64)
    _equal_row_classes(W.view(np.int64), same, False)
    k = call.tasks[0]
    peer = _peer_vote(W, tau, same, np.empty(K), k, call.dense, idx, val, n)
    if u < bq / (bq + abs(peer)):
        return True
    row_axpy(W[k], _peers_label(peer), call.dense, idx, val, n)
    return False


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
        for u in (0.0, 0.9):  # the oracle asked; the peers answer
            peer_second_draw(np.zeros((2, 4)), peer, warm_call(rows, 1), u, 5.0)
