"""The "Random" baseline of xu2018 (Sec. 4.2; docs/algorithms.md Sec. 3.1)."""

from __future__ import annotations

import numpy as np

from learners.active.kernels import ROWS, KernelPass, selective_pass
from learners.active.rounds import ActiveLearner
from learners.amlc.common import APPEND_BIAS_ON, L2_NORMALIZE_ON, XU2018, PerTaskPerceptrons, sgn
from learners.base import BUDGET, Param
from learners.inputs import Vec
from learners.params import interval
from learners.registry import register

__all__ = ["RandomQuery"]


@register
class RandomQuery(PerTaskPerceptrons):
    """Random querying: independent per-task Perceptrons that ask for a label by a coin flip.

    xu2018 Sec. 4.2, "Random does not use any measure of confidence": each
    example is queried with probability ``query_rate`` (1/2 in the paper),
    independently of the margin. On a queried mistake, ``SGN(<x, w_k>) != y``
    (``SGN(0) = +1``), the task's own Perceptron steps: ``w_k += y x``. No
    knowledge is shared between tasks; :meth:`relation_matrix` is the identity.

    Attributes
    ----------
    W_ : ndarray, shape (K, d)
        One Perceptron weight vector per task.
    """

    name = "random-query"
    summary = "Per-task Perceptrons that query each label with a fixed probability (xu2018 Random)"
    paper = f"{XU2018} (Sec. 4.2, Random)"
    params = (
        Param(
            "query_rate",
            0.5,
            "Probability of querying each label (1/2 in xu2018).",
            interval(0.0, 1.0, low_open=True),
        ),
        APPEND_BIAS_ON,
        L2_NORMALIZE_ON,
        BUDGET,
    )
    conformance_params = ({}, {"query_rate": 0.2, "append_bias": False, "l2_normalize": False})

    def _query(self, x: Vec, task: int) -> bool:
        return bool(self.rng.random() < self.hyper["query_rate"])

    def _draws_against_scores(self) -> bool:
        """``decide_and_query`` is the score and one draw against ``query_rate`` (unless a
        subclass changes the score or the draw)."""
        cls = type(self)
        return (
            cls._query is RandomQuery._query
            and cls.decide_and_query is PerTaskPerceptrons.decide_and_query
            and cls.decision_one is ActiveLearner.decision_one
            and cls._decision is PerTaskPerceptrons._decision
        )

    def _score_probabilities(self, scores: np.ndarray) -> np.ndarray:
        """``query_rate`` for every row."""
        return np.full(scores.shape[0], float(self.hyper["query_rate"]))

    def _learn(self, x: Vec, y: float, task: int) -> None:
        if sgn(x.dot(self.W_[task])) != y:
            x.add_to(self.W_[task], y)

    def _run_kernel(self, call: KernelPass) -> tuple[int, int]:
        no_counts = np.zeros(0, dtype=np.int64)
        drawn, asked, _ = selective_pass(
            ROWS,
            self.W_,
            np.zeros(0),
            np.zeros((0, 0)),
            False,
            0.0,
            1.0,
            call,
            0.0,
            float(self.hyper["query_rate"]),
            False,
            no_counts,
            np.zeros(0),
        )
        return drawn, asked

    relation_kind = "fixed-interaction"
    relation_meaning = "Fixed identity matrix: every task learns on its own, nothing is shared."

    def _relation(self) -> np.ndarray:
        return np.eye(self.n_tasks)
