"""AMLC: Active Multitask Learning with Committees (xu2018, Algorithm 1)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from learners.active.kernels import KernelPass
from learners.active.rounds import ActiveLearner
from learners.amlc.committee import committee_update, grow_committee, uniform_committee
from learners.amlc.common import (
    APPEND_BIAS_ON,
    L2_NORMALIZE_ON,
    XU2018,
    PerTaskPerceptrons,
    hinge_losses,
    query_probabilities,
    query_probability,
    sgn,
)
from learners.amlc.event_kernels import amlc_event
from learners.amlc.kernels import amlc_pass
from learners.base import BUDGET, Param
from learners.inputs import Vec, check_task
from learners.params import interval, non_negative, one_of, positive
from learners.perceptron.multitask import rank_one_update
from learners.registry import register

__all__ = ["ActiveMultitaskCommittees"]


@register
class ActiveMultitaskCommittees(PerTaskPerceptrons):
    """AMLC (xu2018, Algorithm 1): each task predicts and asks through a committee of all tasks.

    Round ``(x, k)``, with ``f_m = <x, w_m>`` for all K tasks (one O(K nnz(x))
    product) and the committee row ``tau_k``:

    1. committee score ``p = sum_m tau_km f_m`` (lines 5-6); ``y_hat = SGN(p)``;
    2. :meth:`query_one` draws ``P ~ Bernoulli(b / (b + |p|))`` (line 8);
    3. :meth:`learn_one` applies lines 10-16 for the queried label y: the
       Perceptron step ``w_k += y x`` when ``y_hat != y``; the committee update
       ``tau_km <- tau_km exp(-C l_km / lambda)``, renormalised, with the hinge
       losses ``l_km = (1 - y f_m)_+`` of *all* tasks (self included) and
       ``lambda = sum_m l_km``, on every query, mistake or not; then data sharing:
       every peer ``m != k`` with ``tau_km >= tau_kk`` (updated tau) whose own
       sign disagrees with the label gets ``w_m += y x``.

    Predictions use the committee too: ``decision_one`` is ``p``, and
    :meth:`task_weights` returns ``tau W`` (line 19), whose row k gives the same
    score. :meth:`relation_matrix` returns tau, row-stochastic.

    Resolutions of the paper's gaps (docs/algorithms.md Sec. 3.5 and Sec. 8):

    * all losses 0 (``lambda = 0``, formula undefined): the tau update is skipped;
    * the sharing test compares the peer's sign with the true label y
      (``share_test="label"``, resolution #7, as the authors' code); the paper's
      text compares it with ``y_hat`` (``share_test="prediction"``). With ``"label"``
      and ``W = 0`` at the start, all rows of W stay equal and tau stays uniform
      (every peer errs exactly when the committee does), so AMLC behaves as one
      selective-sampling Perceptron trained on every queried example of every
      task (Sec. 3.3, "identical tasks");
    * ``SGN(0) = +1`` (docs/algorithms.md Sec. 0);
    * the similarity test ``tau_km >= tau_kk`` is taken with a relative tolerance
      (``similarity_rtol``, 1e-9): the K margins of equal rows of W, computed by
      BLAS, can differ in the last bit, which would otherwise make committee
      weights that are equal in exact arithmetic compare unequal and drive tau
      by rounding noise (``similarity_rtol=0`` reproduces the bare comparison).

    ``faithful="code"`` (the default) reproduces the authors' implementation; the
    paper-literal reading is ``faithful="paper"``. The code: tau starts at 1 and every row is renormalised to sum to K (so the
    committee score, and hence ``|p|`` in the query probability, is K times the
    paper's: code with b equals paper with b / K); losses are clipped at 2; ties
    give ``SGN(0) = -1`` for the training prediction ``y_hat`` and for the peers'
    signs in the sharing test; sharing uses the label. :meth:`relation_matrix` is
    still tau divided by K, so its rows sum to 1 in both modes. Test-time
    predictions use ``tau W`` with ties to +1 in both, as the code does.

    A task added by :meth:`add_task` enters with ``w = 0``, a uniform committee
    row ``1 / (K + 1)``, and a uniform column: every existing row gives it
    ``1 / (K + 1)`` and scales its old weights by ``K / (K + 1)``
    (:func:`learners.amlc.committee.grow_committee`).

    Cost per event: O(K nnz(x)) for the K margins (O(nnz(x)) per run of equal rows of W in
    the compiled pass, docs/algorithms.md Sec. 3), O(K) for tau, and O(K nnz(x)) for the
    rank-one update of the updated and shared rows.

    Attributes
    ----------
    W_ : ndarray, shape (K, d)
        Each task's own Perceptron weights ``w_m``.
    tau_ : ndarray, shape (K, K)
        The committee weights; rows sum to 1 (paper) or to K (``faithful="code"``).
    """

    name = "amlc"
    summary = "Active multitask learning with committees (joint committee decisions, data sharing)"
    paper = f"{XU2018} (Algorithm 1)"
    params = (
        Param("b", 1.0, "Query aggressiveness: query with probability b / (b + |p|).", positive),
        Param(
            "C",
            math.log(30.0),
            "Committee learning rate in tau_km * exp(-C l_km / lambda); ln 30 as in the "
            "authors' code (the paper tunes it by cross-validation). C = 0 keeps tau uniform.",
            non_negative,
        ),
        Param(
            "faithful",
            "code",
            "'code' (default): the authors' implementation (tau rows sum to K, losses clipped "
            "at 2, training ties give -1), which produced the paper's Table 1 (~200 queries on "
            "landmine). 'paper': Algorithm 1 as printed (rows sum to 1, SGN(0) = +1), whose "
            "query probability b / (b + |p|) is K times larger for the same b.",
            one_of("paper", "code"),
        ),
        Param(
            "share_test",
            "label",
            "Share with peer m when SGN(f_m) differs from 'label' (the true y; authors' code, "
            "docs/algorithms.md resolution #7) or from 'prediction' (the committee's y_hat; the "
            "paper's text; needs faithful='paper').",
            one_of("label", "prediction"),
        ),
        Param(
            "similarity_rtol",
            1e-9,
            "Relative tolerance of the sharing test tau_km >= tau_kk: peer m counts as similar "
            "when tau_km >= tau_kk (1 - similarity_rtol), so weights that are equal in exact "
            "arithmetic but differ by rounding are treated as equal. 0 gives the bare float "
            "comparison of the authors' code, whose outcome then depends on rounding noise.",
            interval(0.0, 1.0, high_open=True),
        ),
        APPEND_BIAS_ON,
        L2_NORMALIZE_ON,
        BUDGET,
    )
    state_fields: ClassVar[tuple[str, ...]] = ("W_", "tau_")
    per_event_kernel = True
    conformance_params = (
        {},
        {"faithful": "paper"},
        {"faithful": "paper", "share_test": "prediction", "b": 0.5},
        {"C": 0.0, "append_bias": False, "l2_normalize": False, "budget": 200},
    )

    @classmethod
    def _check_params(cls, params: dict[str, Any]) -> None:
        if params["faithful"] == "code" and params["share_test"] != "label":
            raise ValueError(
                "share_test='prediction' is the paper's text: it needs faithful='paper' "
                "(faithful='code', the default, shares by the true label)"
            )

    # ------------------------------------------------------------ conventions
    @property
    def code_faithful(self) -> bool:
        """True when the authors' implementation is reproduced (``faithful="code"``)."""
        return bool(self.hyper["faithful"] == "code")

    def _row_sum(self) -> float:
        """What each committee row sums to: 1 (paper) or K (authors' code)."""
        return float(self.n_tasks) if self.code_faithful else 1.0

    def _tie(self) -> float:
        """``SGN(0)`` of the training prediction and of the sharing test."""
        return -1.0 if self.code_faithful else 1.0

    # ------------------------------------------------------------ hooks
    def _init_state(self) -> None:
        super()._init_state()
        self.tau_ = uniform_committee(self.n_tasks, self._row_sum())

    def _decision(self, x: Vec, task: int) -> float:
        return float(self.tau_[task] @ self._margins(x))

    def _query(self, x: Vec, task: int) -> bool:
        p = self._decision(x, task)
        return bool(self.rng.random() < query_probability(self.hyper["b"], p))

    # ------------------------------------------------------------ per-event queries
    def query_one(self, x: Any, task: int) -> bool:
        """Line 8 against the committee score that ``decision_one`` returns: the
        compiled pass's on one row, as the batch paths draw against theirs (the numpy
        ``_query`` stays the reference; the two scores agree to rounding)."""
        if not self._kernel_scores():
            return super().query_one(x, task)
        t = check_task(task, self.n_tasks)
        return self._ask(self._one_row(x, 0.0, t, learn=False))

    def decide_and_query(
        self, x: Any, task: int, *, probability: bool = False
    ) -> tuple[float, float | None, bool]:
        """``decision_one`` then ``query_one`` with the committee score computed once
        (both read it from the pass on one row): the same score, draw and state."""
        if not self._scores_decide():
            return super().decide_and_query(x, task, probability=probability)
        score = self._one_row(x, 0.0, check_task(task, self.n_tasks), learn=False)
        return score, None, self._ask(score)

    def _scores_decide(self) -> bool:
        """Whether :meth:`decide_and_query` reads the score from the compiled pass (and
        draws against it): scores from the pass, ``decision_one`` not overridden."""
        return self._kernel_scores() and type(self).decision_one is ActiveLearner.decision_one

    def _draws_against_scores(self) -> bool:
        """:meth:`decide_and_query`'s compiled form (:meth:`_scores_decide`), neither it nor
        :meth:`_ask`'s one draw overridden."""
        cls = type(self)
        return (
            self._scores_decide()
            and cls.decide_and_query is ActiveMultitaskCommittees.decide_and_query
            and cls._ask is ActiveMultitaskCommittees._ask
        )

    def _score_probabilities(self, scores: np.ndarray) -> np.ndarray:
        """Line 8's ``b / (b + |score|)`` of every row (:func:`query_probability`)."""
        return query_probabilities(float(self.hyper["b"]), scores)

    def _ask(self, score: float) -> bool:
        """The budget, then a draw with probability ``b / (b + |score|)``."""
        return self._spend_query(
            lambda: self.rng.random() < query_probability(self.hyper["b"], score)
        )

    def _learn(self, x: Vec, y: float, task: int) -> None:
        margins = self._margins(x)
        tie = self._tie()
        y_hat = sgn(float(self.tau_[task] @ margins), tie)
        coef = np.zeros(self.n_tasks)
        if y_hat != y:
            coef[task] = y
        losses = hinge_losses(margins, y)
        if self.code_faithful:
            losses = np.minimum(losses, 2.0)
        row = committee_update(self.tau_[task], losses, self.hyper["C"], self._row_sum())
        self.tau_[task] = row
        signs = np.where(margins > 0.0, 1.0, np.where(margins < 0.0, -1.0, tie))
        target = y if self.hyper["share_test"] == "label" else y_hat
        similar = row >= row[task] * (1.0 - self.hyper["similarity_rtol"])
        share = (signs != target) & similar
        share[task] = False
        coef[share] = y
        if coef.any():
            rank_one_update(self.W_, coef, x, 1.0)

    event_entry = staticmethod(amlc_event)

    def _kernel_args(self) -> tuple[Any, ...]:
        h = self.hyper
        return (
            self.W_,
            self.tau_,
            float(h["b"]),
            float(h["C"]),
            self._row_sum(),
            self._tie(),
            self.code_faithful,
            h["share_test"] == "label",
            float(h["similarity_rtol"]),
        )

    def _run_kernel(self, call: KernelPass) -> tuple[int, int]:
        W, tau, *params = self._kernel_args()
        return amlc_pass(W, tau, call, *params)

    def _add_task(self) -> None:
        super()._add_task()
        grown = grow_committee(self.tau_ / self._row_sum())
        self.tau_ = grown * (self.n_tasks + 1 if self.code_faithful else 1.0)

    relation_kind = "committee-weights"
    relation_meaning = (
        "Learned committee weights: row k says how much each task's predictor counts in "
        "task k's committee (rows sum to 1)."
    )

    def _relation(self) -> np.ndarray:
        return self.tau_ / self._row_sum()

    def _task_weights(self) -> np.ndarray:
        return self.tau_ @ self.W_
