"""Pieces shared by the active multitask learners of xu2018 (AMLC and its baselines).

The AMLC paper (Xu, Tang & Jebara 2018, Sec. 4.2) compares five learners that
all keep one Perceptron weight vector per task and draw their query decisions
from the learner's seeded generator. This module holds what they share:

* the preprocessing of the authors' code (append a bias 1, then L2-normalise;
  docs/algorithms.md Sec. 3 "Common"), on by default;
* :class:`PerTaskPerceptrons`, the ``W`` (K x d) state with run-time task growth;
* the sign conventions (docs/algorithms.md Sec. 0: ``SGN(0) = +1`` by default) and
  the Bernoulli query rule ``b / (b + |margin|)`` of selective sampling
  (Cesa-Bianchi, Gentile & Zaniboni 2006; docs/algorithms.md Sec. 6).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np

from learners.active.rounds import ActiveLearner
from learners.base import APPEND_BIAS, L2_NORMALIZE, Param
from learners.inputs import Vec, check_task

__all__ = [
    "APPEND_BIAS_ON",
    "L2_NORMALIZE_ON",
    "XU2018",
    "PerTaskPerceptrons",
    "hinge_losses",
    "query_probabilities",
    "query_probability",
    "sgn",
]

XU2018 = "Xu, Tang, Jebara. Active Multitask Learning with Committees. 2018"

#: ``append_bias`` on by default, as in the AMLC and PEER code (docs/algorithms.md Sec. 3).
APPEND_BIAS_ON = dataclasses.replace(APPEND_BIAS, default=True)
#: ``l2_normalize`` on by default, as in the AMLC and PEER code (docs/algorithms.md Sec. 3).
L2_NORMALIZE_ON = dataclasses.replace(L2_NORMALIZE, default=True)


def sgn(score: float, tie: float = 1.0) -> float:
    """``SGN(score)`` in {-1, +1}, with ``SGN(0) = tie`` (docs/algorithms.md Sec. 0)."""
    if score > 0.0:
        return 1.0
    if score < 0.0:
        return -1.0
    return tie


def query_probability(b: float, margin: float) -> float:
    """Selective-sampling query probability ``b / (b + |margin|)`` (xu2018 Alg. 1, line 8)."""
    return b / (b + abs(margin))


def query_probabilities(b: float, margins: np.ndarray) -> np.ndarray:
    """:func:`query_probability` of each margin, element by element the same arithmetic."""
    return b / (b + np.abs(margins))


def hinge_losses(margins: np.ndarray, y: float) -> np.ndarray:
    """``l_m = (1 - y <x, w_m>)_+`` for all tasks at once (xu2018 Sec. 2)."""
    return np.maximum(0.0, 1.0 - y * margins)


class PerTaskPerceptrons(ActiveLearner):
    """Base of the xu2018 learners: one Perceptron weight vector per task.

    Both batch paths (``score_and_learn_many`` and ``query_and_learn_many``) run
    the learner's compiled pass (:mod:`learners.amlc.kernels`,
    :func:`learners.active.kernels.selective_pass`); the numpy ``_decision``,
    ``_query`` and ``_learn`` are the per-event path and the reference.

    Attributes
    ----------
    W_ : ndarray, shape (K, d)
        Row k is task k's own weight vector ``w_k``, initialised to 0.
    """

    active: ClassVar[bool] = True
    state_fields: ClassVar[tuple[str, ...]] = ("W_",)
    params: ClassVar[tuple[Param, ...]] = ()

    def _init_state(self) -> None:
        self.W_ = np.zeros((self.n_tasks, self.dim))

    def _compiled(self) -> bool:
        return True

    def decide_and_query(
        self, x: Any, task: int, *, probability: bool = False
    ) -> tuple[float, float | None, bool]:
        """``decision_one`` then ``query_one`` (these rules report no probability) with x
        validated and preprocessed once, where the score is the numpy ``_decision`` (no
        per-event kernel: ``random-query``): the same score, draws and state."""
        if (
            self._kernel_scores()
            or self.reports_query_probability
            or type(self).decision_one is not ActiveLearner.decision_one
        ):
            return super().decide_and_query(x, task, probability=probability)
        t = check_task(task, self.n_tasks)
        v = self._prepare(x)
        score = float(self._decision(v, t))
        return score, None, self._spend_query(lambda: self._query(v, t))

    def _margins(self, x: Vec) -> np.ndarray:
        """``<x, w_m>`` for every task m at once: O(K nnz(x))."""
        return np.asarray(x.dots(self.W_), dtype=np.float64)

    def _decision(self, x: Vec, task: int) -> float:
        return x.dot(self.W_[task])

    def _add_task(self) -> None:
        """A new task starts with ``w = 0``, like the tasks at the start."""
        self.W_ = np.vstack([self.W_, np.zeros((1, self.dim))])

    def _task_weights(self) -> np.ndarray:
        return self.W_.copy()
