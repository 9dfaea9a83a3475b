"""What the ROM learners share: hinge subgradient, outlier reporting, relation matrix.

Gradients (docs/algorithms.md Sec. 5.1): ``u``, ``p_i`` and ``q_i`` enter the margin
of task i identically, so the hinge loss ``f = [1 - y w_i.x]_+`` has one
subgradient for all three blocks, ``g = -y x`` when ``f > 0`` and 0 otherwise
(0 at the kink).

Outlier tasks (docs/algorithms.md Sec. 5.4): the group lasso ``gamma ||Q||_{2,1}``
zeroes whole columns of ``Q``; a task whose ``q_i`` is non-zero keeps
information the shared model cannot explain. ``outlier_scores()`` returns
``||q_i||_2`` per task and ``outlier_tasks()`` the tasks flagged by the rule
named by ``outlier_rule``:

* ``"absolute"`` (paper-literal): ``||q_i|| > outlier_threshold``; with the
  default threshold 0 this is the paper's exact-zero test of the group lasso
  (Sec. 5.4). It is only as good as ``gamma``: when ``gamma`` is chosen for
  error it sits below the noise floor of the averaged subgradients and every
  ``q_i`` is non-zero (bench/results/rom_table.md). ``rom-pgd``'s ``q_i`` holds
  the last few proximal steps and is never exactly zero at the default gamma, so
  this rule flags every task, a false alert on every related task in the service
  (``synthetic-rom:delta2=0.09``: all five tasks flagged); it is no longer the
  default.
* ``"relative"`` (the default; an addition, not in the paper): task i is flagged when
  ``||q_i|| > outlier_threshold`` *and* ``||q_i|| > outlier_factor * m_i``,
  where ``m_i`` is the mean of the other tasks' scores
  (:func:`relative_outliers`). It asks a non-zero column to stand out from the
  rest of ``Q``: a column the shrinkage lets through on noise alone is about
  as large as the others' and is not flagged. The leave-one-out mean (rather
  than a median) keeps the rule defined when most columns are exactly zero: a
  single non-zero column among zeros is flagged, while a small column next to
  a large one is not. With one task there are no others (``m_i = 0``) and the
  rule reduces to the absolute one. Everything comes from the learner state.

Relation matrix: ROM has no task interaction matrix. ``relation_matrix()``
exposes the cosine similarity of the task predictors ``w_i = u + p_i + q_i``
(a derived quantity, not a parameter of the model); a task whose predictor is
still zero has similarity 0 with every other task and 1 with itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from learners.base import Param
from learners.omtl.compiled import CompiledLearner
from learners.params import non_negative, one_of, positive

__all__ = [
    "OUTLIER_FACTOR",
    "OUTLIER_MIN_SHARE",
    "OUTLIER_PARAMS",
    "OUTLIER_RULE",
    "OUTLIER_THRESHOLD",
    "RobustMultitask",
    "cosine_similarity",
    "flagged_outliers",
    "hinge_active",
    "relative_outliers",
]

ZHANG2018 = "Zhang, Zhao, Hao, Soh, Lee. ROM: A Robust Online Multi-Task Learning Approach. 2018"

OUTLIER_THRESHOLD = Param(
    "outlier_threshold",
    0.0,
    "A task is an outlier when ||q_i||_2 exceeds this; 0 is the exact-zero test of the group "
    "lasso (docs/algorithms.md Sec. 5.4).",
    non_negative,
)
OUTLIER_RULE = Param(
    "outlier_rule",
    "relative",
    "How outlier_tasks() flags a task: 'relative' (default; ||q_i|| > outlier_threshold and "
    "> outlier_factor times the mean of the other tasks' scores) or 'absolute' (paper-literal: "
    "||q_i|| > outlier_threshold, the exact-zero test of the group lasso at 0, which flags "
    "every task of rom-pgd, whose q_i is never exactly zero; docs/algorithms.md Sec. 5.4).",
    one_of("absolute", "relative"),
)
OUTLIER_FACTOR = Param(
    "outlier_factor",
    2.0,
    "With outlier_rule='relative': how many times the mean of the other tasks' ||q_j|| a "
    "task's ||q_i|| must exceed.",
    positive,
)
OUTLIER_PARAMS = (OUTLIER_THRESHOLD, OUTLIER_RULE, OUTLIER_FACTOR)
OUTLIER_MIN_SHARE = Param(
    "outlier_min_share",
    0.12,
    "With outlier_rule='relative': the least ||q_i|| / ||w_i|| of a flagged task (the outlier "
    "part's share of the task's predictor w_i = u + p_i + q_i); 0 turns the test off "
    "(docs/algorithms.md Sec. 5.4).",
    non_negative,
)


def hinge_active(score: float, y: float) -> bool:
    """True when the hinge loss ``[1 - y score]_+`` is positive (its subgradient is ``-y x``)."""
    return 1.0 - y * score > 0.0


def cosine_similarity(W: np.ndarray) -> np.ndarray:
    """``K x K`` cosine similarity of the rows of ``W``; zero rows: 0 off the diagonal, 1 on it."""
    norms = np.linalg.norm(W, axis=1)
    safe = np.where(norms > 0.0, norms, 1.0)
    unit = W / safe[:, None]
    S = np.clip(unit @ unit.T, -1.0, 1.0)
    np.fill_diagonal(S, 1.0)
    return S


def relative_outliers(scores: np.ndarray, factor: float, threshold: float = 0.0) -> list[int]:
    """Tasks whose score exceeds ``threshold`` and ``factor`` times the mean of the others'.

    ``m_i = (sum_j s_j - s_i) / (K - 1)`` (0 when ``K = 1``); task i is flagged
    when ``s_i > threshold`` and ``s_i > factor * m_i``.
    """
    s = np.asarray(scores, dtype=float)
    K = s.shape[0]
    if K == 0:
        return []
    others_mean = (s.sum() - s) / max(K - 1, 1)
    flagged = (s > threshold) & (s > factor * others_mean)
    return [int(k) for k in np.flatnonzero(flagged)]


def flagged_outliers(scores: np.ndarray, hyper: Mapping[str, Any]) -> list[int]:
    """The tasks the rule of :data:`OUTLIER_PARAMS` in ``hyper`` flags from ``||q_i||`` scores."""
    threshold = float(hyper["outlier_threshold"])
    if hyper["outlier_rule"] == "relative":
        return relative_outliers(scores, float(hyper["outlier_factor"]), threshold)
    return [int(k) for k in np.flatnonzero(scores > threshold)]


class RobustMultitask(CompiledLearner):
    """Base of learners with an outlier part ``q_i`` per task (``w_i = u + p_i + q_i``).

    Subclasses implement :meth:`_outlier_norms` (``||q_i||_2`` per task) and
    ``_task_weights``; this class adds :meth:`outlier_scores`,
    :meth:`outlier_tasks` and the cosine-similarity relation matrix.
    """

    reports_outliers: ClassVar[bool] = True

    def outlier_scores(self) -> np.ndarray:
        """``||q_i||_2`` for every task, shape ``(K,)``."""
        return self._outlier_norms()

    def outlier_tasks(self) -> list[int]:
        """Indices (0-based) of the tasks flagged by ``outlier_rule`` (see the module docstring);
        the relative rule also requires ``||q_i|| > outlier_min_share ||w_i||``."""
        scores = self.outlier_scores()
        flagged = flagged_outliers(scores, self.hyper)
        share = float(self.hyper.get("outlier_min_share", 0.0))
        if not flagged or share == 0.0 or self.hyper["outlier_rule"] != "relative":
            return flagged
        W = self._task_weights()
        assert W is not None
        norms = np.linalg.norm(W, axis=1)
        return [k for k in flagged if scores[k] > share * norms[k]]

    def _outlier_norms(self) -> np.ndarray:
        raise NotImplementedError

    relation_kind = "weight-similarity"
    relation_meaning = (
        "Cosine similarity of the tasks' predictors (derived, not a model parameter): "
        "tasks whose weight vectors point the same way are close."
    )

    def _relation(self) -> np.ndarray:
        W = self._task_weights()
        assert W is not None
        return cosine_similarity(W)
