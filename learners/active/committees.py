"""AMLC's committee and PEER's peer queries around a margin learner (docs/algorithms.md Sec. 11.6).

xu2018's AMLC and Murugesan & Carbonell's PEER (docs/algorithms.md Sec. 3.3-3.5)
keep one Perceptron per task; their query rules only read the K per-task
margins ``f_m = <x, w_m>``. These wrappers apply the same rules to the margins
of another learner, by default the adaptive shared + per-task learners
(:mod:`learners.adaptive`), whose ``f_m`` is the leader configuration's
``<u_0 + u_m, x>``. Where the original updates ``w_k += y x``, the wrapper hands
the label to the base learner (``base._learn(x, y, k)``), which applies its own
update to the shared and the per-task part.

* ``amlc-adaptive``: committee score ``p = sum_m tau_km f_m``; ask with
  probability ``b / (b + |p|)``; on a label, the base learns it for task k, the
  committee row is updated with the hinge losses of all K margins, and every
  similar peer (``tau_km >= tau_kk``) whose sign disagrees with the label learns
  the example too (xu2018 Alg. 1, lines 10-16, sharing by the label as in the
  authors' code). Predictions use the committee score.
* ``peer-adaptive`` / ``peer-share-adaptive``: ask the task itself with
  probability ``b / (b + |f_k|)``, then the peers with ``bq / (bq + |f_peer|)``,
  ``f_peer = sum_{m != k} tau_km f_m``; when the peers answer, the base learns the
  peers' label ``SGN(f_peer)`` and no oracle query is counted. On an oracle label
  the base learns it and, when the task erred, the peer weights are updated;
  PEER+Share also teaches every erring peer. Predictions are the task's own margin.

Budgets are the active learners' ``budget`` (oracle queries only). Over an
adaptive base (:class:`~learners.adaptive.learners.AdaptiveLearner`: the three
members and the ``adaptive`` selector) both batch paths (``score_and_learn_many``,
``query_and_learn_many``) run the compiled passes of
:mod:`learners.active.adaptive_kernels`, which give the scores, query decisions,
draws, weights and base state of the row-by-row numpy rounds kept here as the
reference (:meth:`~learners.active.rounds.ActiveLearner._score_and_learn_reference`),
to rounding; so do the per-event calls, on the same passes: a single event's score
and learning through an entry of :mod:`learners.active.adaptive_event_kernels` (or
the pass on one row), and its query drawn here against the margins that pass reads
(docs/algorithms.md Sec. 11.6). Over any other base the batches and the single
events are those numpy rounds. Cost per event: the base's K margins (O(K nnz(x))
for the adaptive learners) and O(K) for the weights, plus one base update per
learner of the example.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from learners.active.adaptive_event_kernels import (
    committee_event,
    peer_rule_event,
    peer_rule_margins_event,
)
from learners.active.adaptive_kernels import (
    BaseArrays,
    committee_pass,
    peer_rule_margins,
    peer_rule_pass,
)
from learners.active.kernels import KernelPass
from learners.active.rounds import ActiveLearner
from learners.active.selective import (
    BASE,
    BASE_PARAMS,
    SAMPLING_B,
    SelectiveSampling,
    default_on,
)
from learners.adaptive.event_kernels import adaptive_event
from learners.adaptive.kernels import adaptive_pass
from learners.adaptive.learners import AdaptiveLearner
from learners.amlc.committee import (
    committee_update,
    grow_committee,
    grow_peer_weights,
    peer_update,
    uniform_committee,
    uniform_peer_weights,
)
from learners.amlc.common import (
    XU2018,
    hinge_losses,
    query_probabilities,
    query_probability,
    sgn,
)
from learners.base import APPEND_BIAS, BUDGET, L2_NORMALIZE, LOG_SCALE, Learner, Param
from learners.inputs import Batch, Vec, as_vector, check_task
from learners.kernels import kernel_array
from learners.params import non_negative, positive
from learners.registry import register

__all__ = [
    "AdaptiveCommittee",
    "AdaptivePeer",
    "AdaptivePeerShare",
    "rule_params",
    "task_margins",
]

MURUGESAN2017 = "Murugesan, Carbonell. Active Learning from Peers. NIPS 2017"

#: The adaptive logistic learner is the default base of these rules.
ADAPTIVE_BASE = dataclasses.replace(
    BASE,
    default="adaptive-logistic",
    description="Registry name of the passive margin learner whose per-task margins the rule "
    "reads (adaptive-logistic, adaptive-hinge, adaptive-arow, adaptive, or any learner with "
    "task_weights()).",
)
#: ``append_bias`` on by default, as for the adaptive learners themselves (the wrapper
#: preprocesses x, so the base's own bias is switched off).
BIAS_ON = default_on(APPEND_BIAS)
#: The authors' code clips the committee's hinge losses at 2 (docs/algorithms.md Sec. 3.5).
LOSS_CLIP = 2.0
#: Relative tolerance of the similarity test ``tau_km >= tau_kk`` (docs/algorithms.md Sec. 3.5).
SIMILARITY_RTOL = 1e-9


def rule_params(weights: Param) -> tuple[Param, ...]:
    """The parameters of a rule over a base: base, its parameters, b, the rule's own
    ``weights`` parameter, the budget and the input preprocessing."""
    return (
        ADAPTIVE_BASE,
        BASE_PARAMS,
        SAMPLING_B,
        weights,
        BUDGET,
        BIAS_ON,
        L2_NORMALIZE,
        LOG_SCALE,
    )


def task_margins(base: Learner, x: Vec) -> np.ndarray:
    """All K per-task margins ``f_m`` of ``base`` for ``x``.

    Adaptive learners: the leader configuration's ``<u_0 + u_m, x>``, O(K nnz(x)).
    Other learners: ``<w_m, x>`` over :meth:`~learners.base.Learner.task_weights`.
    """
    if isinstance(base, AdaptiveLearner):
        m = base.leader()
        return np.asarray(x.dots(base.U_[m]), dtype=np.float64) + x.dot(base.U0_[m])
    W = base._task_weights()
    if W is None:
        raise ValueError(f"base learner {base.name!r} has no per-task weights to read margins from")
    return np.asarray(x.dots(W), dtype=np.float64)


class _MarginRule(SelectiveSampling):
    """What the two rules share: the base, the weights ``tau_``, the numpy batch paths."""

    params: ClassVar[tuple[Param, ...]] = ()
    state_fields: ClassVar[tuple[str, ...]] = ("n_updates_", "radius2_", "tau_")
    reports_query_probability = True
    # the per-event calls run the pass on one row (one call for the base's update, tau
    # and the shared labels), through an entry for a dense row; over an adaptive base
    # the scores are the pass's, and the queries draw against its margins
    # (docs/algorithms.md Sec. 11.6)
    per_event_kernel = True
    kernel_decisions = True

    def _init_state(self) -> None:
        super()._init_state()
        self.tau_ = self._initial_weights(self.n_tasks)
        if not isinstance(self.base_, AdaptiveLearner) and self.base_._task_weights() is None:
            raise ValueError(f"base learner {self.base_.name!r} has no per-task weights")

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """The base's state, two length-K vectors and the K x K weights ``tau_``."""
        return super().state_bytes(n_features, n_tasks, **params) + 8 * int(n_tasks) ** 2

    def _initial_weights(self, n_tasks: int) -> np.ndarray:
        raise NotImplementedError

    def _compiled_query(self) -> bool:
        """Whether a single event's query draws against the numbers of the compiled pass
        (the rule's :meth:`decide_and_query`); each rule says when."""
        return False

    def query_one(self, x: Any, task: int) -> bool:
        """The rule's draws against the compiled pass's numbers, through
        :meth:`decide_and_query`, where :meth:`_compiled_query` says so; else the numpy
        ``_query``."""
        if not self._compiled_query():
            return super().query_one(x, task)
        return self.decide_and_query(x, task)[2]

    def _threshold(self, x: Vec, task: int) -> float:
        return float(self.hyper["b"])

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        if self._compiled():
            return self._kernel_pass(batch, y, tasks, active=False)[0]
        return self._score_and_learn_reference(batch, y, tasks)

    def _compiled(self) -> bool:
        """Batches run the compiled pass over an adaptive base (module docstring)."""
        return isinstance(self.base_, AdaptiveLearner)

    def _base_arrays(self) -> BaseArrays:
        """The adaptive base's configurations, state and outlier parts, which the
        compiled passes update in place."""
        base = self.base_
        assert isinstance(base, AdaptiveLearner)
        return base.kernel_arrays()

    def _weights_for_kernel(self) -> np.ndarray:
        """``tau_`` as the C-ordered float64 array the kernels update in place."""
        self.tau_ = kernel_array(self.tau_, np.float64)
        return self.tau_

    def _relation(self) -> np.ndarray:
        return np.array(self.tau_, copy=True)

    def relation_description(self) -> tuple[str, str]:
        """The rule's own weights ``tau_`` (not the base's matrix)."""
        return self.relation_kind, self.relation_meaning

    def _task_weights(self) -> np.ndarray | None:
        return self.base_.task_weights()


COMMITTEE_C = Param(
    "C",
    math.log(30.0),
    "Committee learning rate in tau_km * exp(-C l_km / lambda) (ln 30 as in the AMLC authors' "
    "code); 0 keeps the committee uniform.",
    non_negative,
)
PEER_BQ = Param(
    "bq",
    5.0,
    "Peer confidence: the oracle is asked with probability bq / (bq + |f_peer|) (5 in the AMLC "
    "authors' code).",
    positive,
)


@register
class AdaptiveCommittee(_MarginRule):
    """AMLC's committee over a margin learner (xu2018 Alg. 1; docs/algorithms.md Sec. 11.6).

    Round ``(x, k)`` with the base's margins ``f`` (:func:`task_margins`):
    ``p = tau_k . f`` is the score and ``query_one`` asks with probability
    ``b / (b + |p|)``. ``learn_one(x, y, k)``: the base learns ``(x, y, k)``; the
    row ``tau_k`` is updated with ``l_km = min(2, (1 - y f_m)_+)`` (Alg. 1 line 12,
    the clip of the authors' code; skipped when all losses are 0); then every peer
    ``m != k`` with ``tau_km >= tau_kk (1 - 1e-9)`` and ``SGN(f_m) != y`` (margins
    from before the round) has the base learn ``(x, y, m)``. tau rows sum to 1.

    Attributes
    ----------
    base_ : Learner
        The wrapped learner (state keys ``state.base.*``).
    tau_ : ndarray, shape (K, K)
        The committee, row-stochastic.
    """

    name = "amlc-adaptive"
    relation_kind = "committee-weights"
    relation_meaning = (
        "Learned committee weights: row k says how much each task's margin counts in "
        "task k's committee."
    )
    summary = "AMLC's committee query rule and data sharing over an adaptive multitask learner"
    paper = f"{XU2018} (Algorithm 1), over the adaptive learners of docs/algorithms.md Sec. 11"
    params: ClassVar[tuple[Param, ...]] = rule_params(COMMITTEE_C)
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"base": "adaptive-arow", "b": 0.3, "budget": 60, "append_bias": False},
        {"base": "adaptive", "base_params": {"etas": "1.0", "couplings": "0.5,2"}, "C": 0.0},
    )

    margin_is_decision = True

    def _initial_weights(self, n_tasks: int) -> np.ndarray:
        return uniform_committee(n_tasks)

    # ------------------------------------------------------------ per-event queries
    def _compiled_query(self) -> bool:
        """Whether a single event's query draws against the compiled pass's score: scores
        from the pass (an adaptive base), and neither ``decision_one`` nor the numpy
        query hooks overridden."""
        cls = type(self)
        return (
            self._kernel_scores()
            and cls.decision_one is ActiveLearner.decision_one
            and cls._query is SelectiveSampling._query
            and cls._query_probability is SelectiveSampling._query_probability
        )

    def query_probability(self, x: Any, task: int) -> float:
        """``b / (b + |p|)`` of the committee score ``p`` that ``decision_one`` returns
        (the compiled pass's on one row, against which the batch paths draw too; the
        numpy ``_query`` stays the reference, its score equal to rounding)."""
        if not self._compiled_query():
            return super().query_probability(x, task)
        return query_probability(float(self.hyper["b"]), self.decision_one(x, task))

    def decide_and_query(
        self, x: Any, task: int, *, probability: bool = False
    ) -> tuple[float, float | None, bool]:
        """``decision_one``, ``query_probability`` and ``query_one`` with the committee
        score computed once: the same score, probability, draw and state."""
        if not self._compiled_query():
            return super().decide_and_query(x, task, probability=probability)
        score = self.decision_one(x, task)
        p = query_probability(float(self.hyper["b"]), score)
        asked = self._spend_query(lambda: self.rng.random() < p)
        return score, (p if probability else None), asked

    def _draws_against_scores(self) -> bool:
        """:meth:`decide_and_query`'s compiled rule: the committee score and one draw
        against ``b / (b + |score|)``."""
        return (
            self._compiled_query()
            and type(self).decide_and_query is AdaptiveCommittee.decide_and_query
        )

    def _score_probabilities(self, scores: np.ndarray) -> np.ndarray:
        """``b / (b + |score|)`` of every row (:func:`query_probability`)."""
        return query_probabilities(float(self.hyper["b"]), scores)

    def _margin(self, x: Vec, task: int) -> float:
        return float(self.tau_[task] @ task_margins(self.base_, x))

    def _decision(self, x: Vec, task: int) -> float:
        return self._margin(x, task)

    def _learn(self, x: Vec, y: float, task: int) -> None:
        margins = task_margins(self.base_, x)
        self.base_._learn(x, y, task)
        losses = np.minimum(hinge_losses(margins, y), LOSS_CLIP)
        row = committee_update(self.tau_[task], losses, float(self.hyper["C"]))
        self.tau_[task] = row
        similar = row >= row[task] * (1.0 - SIMILARITY_RTOL)
        erring = np.where(margins > 0.0, 1.0, np.where(margins < 0.0, -1.0, 1.0)) != y
        share = similar & erring
        share[task] = False
        for m in np.flatnonzero(share).tolist():
            self.base_._learn(x, y, m)

    event_entry = staticmethod(committee_event)

    def _kernel_args(self) -> tuple[Any, ...]:
        h = self.hyper
        return (
            self._base_arrays(),
            self._weights_for_kernel(),
            float(h["b"]),
            float(h["C"]),
            SIMILARITY_RTOL,
        )

    def _run_kernel(self, call: KernelPass) -> tuple[int, int]:
        return committee_pass(call, *self._kernel_args())

    def _task_weights(self) -> np.ndarray | None:
        W = self.base_.task_weights()
        return None if W is None else self.tau_ @ W

    def _add_task(self) -> None:
        super()._add_task()
        self.tau_ = grow_committee(self.tau_)


@register
class AdaptivePeer(_MarginRule):
    """PEER's peer queries over a margin learner (docs/algorithms.md Sec. 3.3 and Sec. 11.6).

    Round ``(x, k)`` with the base's margins ``f``: ``query_one`` draws
    ``P ~ Bernoulli(b / (b + |f_k|))``; on ``P = 1`` it draws
    ``Q ~ Bernoulli(bq / (bq + |f_peer|))`` with ``f_peer = tau_k . f`` (zero
    diagonal). ``Q = 1`` asks the oracle; ``Q = 0`` lets the peers answer: the
    base learns ``(x, SGN(f_peer), k)`` and no query is counted.
    ``learn_one(x, y, k)``: the base learns ``(x, y, k)``; if ``SGN(f_k) != y`` the
    peer weights of row k are updated (:func:`learners.amlc.committee.peer_update`).
    Predictions are the task's own margin ``f_k``.
    """

    name = "peer-adaptive"
    relation_kind = "committee-weights"
    relation_meaning = (
        "Learned peer weights: row k says how much each other task is trusted to answer "
        "for task k (rows sum to 1 over the peers)."
    )
    summary = "PEER's peer-then-oracle queries over an adaptive multitask learner"
    paper = f"{MURUGESAN2017}; as in {XU2018}, over the adaptive learners (Sec. 11)"
    params: ClassVar[tuple[Param, ...]] = rule_params(PEER_BQ)
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"base": "adaptive-hinge", "bq": 1.0, "budget": 50, "l2_normalize": True},
    )
    #: Whether an oracle label is also learned by the peers that misclassify it.
    shares: ClassVar[bool] = False
    #: An active round draws twice when its first draw asks (the oracle, then the peers).
    draws_per_row: ClassVar[int] = 2

    def _initial_weights(self, n_tasks: int) -> np.ndarray:
        return uniform_peer_weights(n_tasks)

    def _margin(self, x: Vec, task: int) -> float:
        return float(task_margins(self.base_, x)[task])

    def _query_probability(self, x: Vec, task: int) -> float:
        margins = task_margins(self.base_, x)
        own = query_probability(float(self.hyper["b"]), float(margins[task]))
        peer = float(self.tau_[task] @ margins)
        return own * query_probability(float(self.hyper["bq"]), peer)

    def _query(self, x: Vec, task: int) -> bool:
        margins = task_margins(self.base_, x)
        own = query_probability(float(self.hyper["b"]), float(margins[task]))
        return self._draws(x, task, own, float(self.tau_[task] @ margins))

    def _draws(self, x: Vec, task: int, own: float, peer: float) -> bool:
        """PEER's round: ask the task with probability ``own``, then the oracle with
        ``bq / (bq + |peer|)``; when the peers answer, the base learns ``SGN(peer)``."""
        if self.rng.random() >= own:
            return False
        if self.rng.random() < query_probability(float(self.hyper["bq"]), peer):
            return True
        self.base_._learn(x, sgn(peer), task)
        return False

    # ------------------------------------------------------------ per-event queries
    def _compiled_query(self) -> bool:
        """Whether a single event's query reads the compiled pass's margins: scores from
        the pass (an adaptive base), and neither ``decision_one`` nor the numpy query
        hooks overridden."""
        cls = type(self)
        return (
            self._kernel_scores()
            and cls.decision_one is ActiveLearner.decision_one
            and cls._query is AdaptivePeer._query
            and cls._query_probability is AdaptivePeer._query_probability
            and cls._draws is AdaptivePeer._draws
        )

    def query_probability(self, x: Any, task: int) -> float:
        """``b / (b + |f_k|) * bq / (bq + |f_peer|)``, the probability that
        :meth:`query_one` asks the oracle now."""
        if not self._compiled_query():
            return super().query_probability(x, task)
        _, own, vote, _, _ = self._pass_margins(x, check_task(task, self.n_tasks))
        return self._both_probabilities(own, vote)[1]

    def decide_and_query(
        self, x: Any, task: int, *, probability: bool = False
    ) -> tuple[float, float | None, bool]:
        """``decision_one``, ``query_probability`` and ``query_one`` (:meth:`_query`'s two
        draws, the peers' answer learned on the second) with x validated and prepared
        once and the K margins read once: the same numbers, draws and state.

        Over an adaptive base the score, the task's margin and the peers' vote come from
        the compiled pass on the row (:func:`~learners.active.adaptive_kernels.peer_rule_margins`,
        through an entry for a dense row), the draws are made here, and where the peers
        answer the base learns their label through its own pass (:meth:`_pass_draws`):
        the numbers of ``query_and_learn_many`` on the row. The numpy ``_query`` stays the reference."""
        if self._compiled_query():
            t = check_task(task, self.n_tasks)
            score, own, vote, row, call = self._pass_margins(x, t)
            first, p = self._both_probabilities(own, vote)
            asked = self._spend_query(lambda: self._pass_draws(first, vote, t, row, call))
            return score, (p if probability else None), asked
        cls = type(self)
        if (
            self._kernel_scores()
            or cls.decision_one is not ActiveLearner.decision_one
            or cls._query is not AdaptivePeer._query
            or cls._query_probability is not AdaptivePeer._query_probability
        ):
            return Learner.decide_and_query(self, x, task, probability=probability)
        v = self._prepare(as_vector(x, self.n_features))
        t = check_task(task, self.n_tasks)
        score = float(self._decision(v, t))
        margins = task_margins(self.base_, v)
        own = query_probability(float(self.hyper["b"]), float(margins[t]))
        peer = float(self.tau_[t] @ margins)
        asked = self._spend_query(lambda: self._draws(v, t, own, peer))
        if not probability:
            return score, None, asked
        return score, own * query_probability(float(self.hyper["bq"]), peer), asked

    def _both_probabilities(self, own: float, vote: float) -> tuple[float, float]:
        """The first draw's probability ``b / (b + |f_k|)`` and the oracle's, that one
        times ``bq / (bq + |f_peer|)``."""
        first = query_probability(float(self.hyper["b"]), own)
        return first, first * query_probability(float(self.hyper["bq"]), vote)

    def _pass_margins(
        self, x: Any, task: int
    ) -> tuple[float, float, float, np.ndarray | None, KernelPass | None]:
        """``(score, f_k, f_peer)`` of ``x`` from the compiled pass, with the row it read:
        a dense float64 row an entry took, or else the pass on one row (validated here)."""
        base, tau = self._base_arrays(), self._weights_for_kernel()
        row = self._event_row(x) if type(x) is np.ndarray and x.ndim == 1 else None
        if row is not None:
            score, own, vote = peer_rule_margins_event(
                row, self._bias, self._normalize, task, base, tau
            )
            if score == score or self._entry_took(row, False):
                return score, own, vote, row, None
        call = self._vector_call(x, 0.0, task, False)
        score, own, vote = peer_rule_margins(call, base, tau)
        return score, own, vote, None, call

    def _pass_draws(
        self, first: float, vote: float, task: int, row: np.ndarray | None, call: KernelPass | None
    ) -> bool:
        """PEER's draws against the pass's margins (:meth:`_draws`): where the peers
        answer, the base learns ``SGN(f_peer)`` on the same row through its own pass
        (:func:`~learners.adaptive.kernels.adaptive_pass`, or the entry of a dense row,
        :func:`~learners.adaptive.event_kernels.adaptive_event`): the rule's pass learns
        the peers' label with the base's row step alone, the same numbers."""
        if self.rng.random() >= first:
            return False
        if self.rng.random() < query_probability(float(self.hyper["bq"]), vote):
            return True
        answer = 1.0 if vote >= 0.0 else -1.0
        configs, state, outlier = self._base_arrays()
        if call is not None:
            adaptive_pass(call._replace(y=np.array([answer])), configs, state, outlier)
        else:
            assert row is not None
            adaptive_event(
                row, self._bias, self._normalize, task, answer, True, False, configs, state, outlier
            )
        return False

    def _learn(self, x: Vec, y: float, task: int) -> None:
        margins = task_margins(self.base_, x)
        self.base_._learn(x, y, task)
        if sgn(float(margins[task])) != y:
            self.tau_[task] = peer_update(self.tau_[task], hinge_losses(margins, y), task)
        if self.shares:
            erring = y * margins <= 0.0
            erring[task] = False
            for m in np.flatnonzero(erring).tolist():
                self.base_._learn(x, y, m)

    event_entry = staticmethod(peer_rule_event)

    def _kernel_args(self) -> tuple[Any, ...]:
        h = self.hyper
        return (
            self._base_arrays(),
            self._weights_for_kernel(),
            float(h["b"]),
            float(h["bq"]),
            self.shares,
        )

    def _run_kernel(self, call: KernelPass) -> tuple[int, int]:
        return peer_rule_pass(call, *self._kernel_args())

    def _add_task(self) -> None:
        super()._add_task()
        self.tau_ = grow_peer_weights(self.tau_)


@register
class AdaptivePeerShare(AdaptivePeer):
    """PEER+Share over a margin learner: PEER plus teaching every erring peer (Sec. 3.4)."""

    name = "peer-share-adaptive"
    summary = "PEER+Share (peer queries, oracle labels shared with erring peers), adaptive base"
    paper = f"{XU2018} (Sec. 4.2, PEER+Share), over the adaptive learners (Sec. 11)"
    shares = True
