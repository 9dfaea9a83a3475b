"""PEER (Murugesan & Carbonell 2017) and PEER+Share, the baselines of xu2018 (Sec. 3.3, 4.2)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from learners.active.kernels import KernelPass
from learners.active.rounds import ActiveLearner
from learners.amlc.committee import grow_peer_weights, peer_update, uniform_peer_weights
from learners.amlc.common import (
    APPEND_BIAS_ON,
    L2_NORMALIZE_ON,
    XU2018,
    PerTaskPerceptrons,
    hinge_losses,
    query_probability,
    sgn,
)
from learners.amlc.event_kernels import peer_event, peer_query_event
from learners.amlc.kernels import peer_pass, peer_second_draw
from learners.base import BUDGET, Param
from learners.inputs import Vec, check_task
from learners.params import positive
from learners.registry import register

__all__ = ["PeerLearning", "PeerShare"]

MURUGESAN2017 = "Murugesan, Carbonell. Active Learning from Peers. NIPS 2017"


@register
class PeerLearning(PerTaskPerceptrons):
    """PEER: ask the peer tasks before the oracle (Murugesan & Carbonell 2017, "PEERsum").

    Round ``(x, k)`` with all margins ``f_m = <x, w_m>`` (docs/algorithms.md Sec. 3.3):

    1. :meth:`query_one` draws ``P ~ Bernoulli(b / (b + |f_k|))``; ``P = 0``
       (the task is confident): no query, nothing changes;
    2. if ``P = 1`` it asks the peers: ``f_peer = sum_{m != k} tau_km f_m`` and
       ``Q ~ Bernoulli(bq / (bq + |f_peer|))``. ``Q = 1``: the oracle is queried
       (answer True). ``Q = 0``: the peers answer, no oracle query is counted, and
       the task trains on the peers' label regardless of its correctness,
       ``w_k += SGN(f_peer) x`` (step 5 of the reference) -- the one update that
       happens inside :meth:`query_one`;
    3. :meth:`learn_one` (an oracle label y): when ``SGN(f_k) != y``,
       ``w_k += y x`` and the peer weights of row k are updated over ``m != k``:
       ``tau_km <- tau_km exp(-l_km / lambda)``, ``lambda = sum_{m != k} l_km``
       (1 when that is 0), renormalised over the peers.

    ``decision_one`` is the task's own margin ``f_k`` (the test-time predictor of
    xu2018 is the plain ``w_k``), so on rounds where the peers answer, the
    training-time label (``SGN(f_peer)``) can differ from ``predict_one``.
    ``SGN(0) = +1``. The peer-confidence default ``bq = 5`` is the AMLC authors'
    re-implementation behind xu2018 Table 1 (Murugesan's landmine script uses
    ``bq = 1``). tau has a zero diagonal; for K >= 2 its rows sum to 1. A task
    added at run time enters with uniform peer weights ``1 / K`` and receives
    ``1 / K`` from every other task (:func:`learners.amlc.committee.grow_peer_weights`).

    Cost per event: O(nnz(x)) for the task's margin; O(K nnz(x)) for the peers' margins,
    only on a mistake, an active round whose first draw asks, and every PEER+Share round
    (one margin per run of equal rows of W, docs/algorithms.md Sec. 3); O(K) for tau.

    Attributes
    ----------
    W_ : ndarray, shape (K, d)
        One Perceptron weight vector per task.
    tau_ : ndarray, shape (K, K)
        Peer weights (zero diagonal).
    """

    name = "peer"
    summary = "PEER: active multitask learning that asks peer tasks before the oracle"
    paper = f"{MURUGESAN2017}; as re-implemented in {XU2018} (Sec. 4.2)"
    params = (
        Param(
            "b", 1.0, "Self confidence: the task asks with probability b / (b + |f_k|).", positive
        ),
        Param(
            "bq",
            5.0,
            "Peer confidence: the oracle is asked with probability bq / (bq + |f_peer|) "
            "(5 in the AMLC authors' code, 1 in Murugesan's landmine script).",
            positive,
        ),
        APPEND_BIAS_ON,
        L2_NORMALIZE_ON,
        BUDGET,
    )
    state_fields: ClassVar[tuple[str, ...]] = ("W_", "tau_")
    conformance_params = ({}, {"bq": 1.0, "append_bias": False, "l2_normalize": False})
    #: Whether a queried example is shared with the peers that misclassify it.
    shares: ClassVar[bool] = False
    draws_per_row = 2
    per_event_kernel = True

    def _init_state(self) -> None:
        super()._init_state()
        self.tau_ = uniform_peer_weights(self.n_tasks)

    def _query(self, x: Vec, task: int) -> bool:
        margins = self._margins(x)
        if self.rng.random() >= query_probability(self.hyper["b"], margins[task]):
            return False
        peer_margin = float(self.tau_[task] @ margins)
        if self.rng.random() < query_probability(self.hyper["bq"], peer_margin):
            return True
        x.add_to(self.W_[task], sgn(peer_margin))
        return False

    def _learn(self, x: Vec, y: float, task: int) -> None:
        margins = self._margins(x)
        if sgn(float(margins[task])) != y:
            x.add_to(self.W_[task], y)
            self.tau_[task] = peer_update(self.tau_[task], hinge_losses(margins, y), task)
        if self.shares:
            self._share(x, y, task, margins)

    def _share(self, x: Vec, y: float, task: int, margins: np.ndarray) -> None:
        """PEER+Share: ``w_j += y x`` for every peer j whose margin does not agree with y."""
        erring = y * margins <= 0.0
        erring[task] = False
        if erring.any():
            x.add_outer(self.W_, np.where(erring, y, 0.0))

    event_entry = staticmethod(peer_event)

    # ------------------------------------------------------------ per-event queries
    def _compiled_rounds(self) -> bool:
        """Whether the per-event query runs on the compiled pass: scores from it
        (:meth:`_kernel_scores`), and neither ``decision_one`` nor the numpy ``_query``
        overridden."""
        cls = type(self)
        return (
            self._kernel_scores()
            and cls.decision_one is ActiveLearner.decision_one
            and cls._query is PeerLearning._query
        )

    def query_one(self, x: Any, task: int) -> bool:
        """Steps 1-2 of the round on the compiled pass (:meth:`decide_and_query`)."""
        if not self._compiled_rounds():
            return super().query_one(x, task)
        return self._scored_query(x, task)[1]

    def decide_and_query(
        self, x: Any, task: int, *, probability: bool = False
    ) -> tuple[float, float | None, bool]:
        """``decision_one`` then ``query_one`` with the row read once: ``P`` is drawn
        against the score ``decision_one`` returns (the compiled pass's on one row), and
        where it asks, ``Q`` against the peers' vote on the same row
        (:func:`~learners.amlc.event_kernels.peer_query_event`, or
        :func:`~learners.amlc.kernels.peer_second_draw` on the row's pass where no entry
        took it), as the batch paths draw against theirs. The same score, draws and state
        as the two calls; the numpy ``_query`` stays the reference (the margins agree to
        rounding)."""
        if not self._compiled_rounds():
            return super().decide_and_query(x, task, probability=probability)
        score, asked = self._scored_query(x, task)
        return score, None, asked

    def _scored_query(self, x: Any, task: int) -> tuple[float, bool]:
        """The score of ``(x, task)`` and the round's answer (:meth:`decide_and_query`)."""
        t = check_task(task, self.n_tasks)
        row = self._event_row(x) if type(x) is np.ndarray and x.ndim == 1 else None
        score = None if row is None else self._entry_score(row, 0.0, t, False, False)
        call = None
        if score is None:  # the general path: validation, canonical vector, a one-row pass
            call = self._vector_call(x, 0.0, t, False)
            self._run_kernel(call)
            score = float(call.scores[0])
        return score, self._spend_query(lambda: self._draws(score, t, row, call))

    def _draws(
        self, score: float, task: int, row: np.ndarray | None, call: KernelPass | None
    ) -> bool:
        """``P`` against ``b / (b + |score|)``; where it asks, ``Q`` and the rest of the round
        on ``call`` (a pass on the row) or, without one, on the dense ``row`` an entry took."""
        if self.rng.random() >= query_probability(self.hyper["b"], score):
            return False
        u, bq = self.rng.random(), float(self.hyper["bq"])
        if call is not None:
            return bool(peer_second_draw(self.W_, self.tau_, call, u, bq))
        assert row is not None
        return bool(
            peer_query_event(row, self._bias, self._normalize, task, u, self.W_, self.tau_, bq)
        )

    def _kernel_args(self) -> tuple[Any, ...]:
        h = self.hyper
        return (self.W_, self.tau_, float(h["b"]), float(h["bq"]), self.shares)

    def _run_kernel(self, call: KernelPass) -> tuple[int, int]:
        W, tau, *params = self._kernel_args()
        return peer_pass(W, tau, call, *params)

    def _add_task(self) -> None:
        super()._add_task()
        self.tau_ = grow_peer_weights(self.tau_)

    relation_kind = "committee-weights"
    relation_meaning = (
        "Learned peer weights: row k says how much each other task is trusted to answer "
        "for task k (rows sum to 1 over the peers)."
    )

    def _relation(self) -> np.ndarray:
        return self.tau_.copy()


@register
class PeerShare(PeerLearning):
    """PEER+Share: PEER plus xu2018's data sharing (Sec. 3.2; docs/algorithms.md Sec. 3.4).

    After every oracle query of task k (own update included), every peer ``j``
    whose sign on x disagrees with the label gets ``w_j += y x``; a peer with
    ``f_j = 0`` counts as disagreeing (the reference compares ``y`` with
    ``sign(f_j)``, which is 0 there). Margins are those from before the round's
    updates.

    Sec. 3.2 shares only with peers whose weight is at least the task's own,
    ``tau_kj >= tau_kk``. PEER's tau has no self weight: the authors' code
    compares with a never-updated diagonal entry ``(3 - K) / (K - 1)``, which is
    at most every peer weight for all K >= 2 (it equals 1, the only peer weight,
    for K = 2), and the intended zero self weight is below every peer weight too.
    Both readings therefore share with *every* erring peer, which is what this
    class does.
    """

    name = "peer-share"
    summary = "PEER plus sharing of each queried example with the peers that misclassify it"
    paper = f"{XU2018} (Sec. 4.2, PEER+Share)"
    shares = True
