"""What the ROM learners share: hinge subgradient, outlier reporting, relation matrix.

Gradients (algorithms.md Sec. 5.1): ``u``, ``p_i`` and ``q_i`` enter the margin
of task i identically, so the hinge loss ``f = [1 - y w_i.x]_+`` has one
subgradient for all three blocks, ``g = -y x`` when ``f > 0`` and 0 otherwise
(0 at the kink).

Outlier tasks (algorithms.md Sec. 5.4): the group lasso ``gamma ||Q||_{2,1}``
zeroes whole columns of ``Q``; a task whose ``q_i`` is non-zero keeps
information the shared model cannot explain. ``outlier_scores()`` returns
``||q_i||_2`` per task and ``outlier_tasks()`` the tasks whose score exceeds
``outlier_threshold`` (default 0: the exact-zero test of the group lasso).

Relation matrix: ROM has no task interaction matrix. ``relation_matrix()``
exposes the cosine similarity of the task predictors ``w_i = u + p_i + q_i``
(a derived quantity, not a parameter of the model); a task whose predictor is
still zero has similarity 0 with every other task and 1 with itself.
"""

from __future__ import annotations

import numpy as np

from learners.base import Learner, Param, non_negative

__all__ = ["OUTLIER_THRESHOLD", "RobustMultitask", "cosine_similarity", "hinge_active"]

ZHANG2018 = "Zhang, Zhao, Hao, Soh, Lee. ROM: A Robust Online Multi-Task Learning Approach. 2018"

OUTLIER_THRESHOLD = Param(
    "outlier_threshold",
    0.0,
    "A task is an outlier when ||q_i||_2 exceeds this; 0 is the exact-zero test of the group "
    "lasso (algorithms.md Sec. 5.4).",
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


class RobustMultitask(Learner):
    """Base of learners with an outlier part ``q_i`` per task (``w_i = u + p_i + q_i``).

    Subclasses implement :meth:`_outlier_norms` (``||q_i||_2`` per task) and
    ``_task_weights``; this class adds :meth:`outlier_scores`,
    :meth:`outlier_tasks` and the cosine-similarity relation matrix.
    """

    def outlier_scores(self) -> np.ndarray:
        """``||q_i||_2`` for every task, shape ``(K,)``."""
        return self._outlier_norms()

    def outlier_tasks(self) -> list[int]:
        """Indices (0-based) of the tasks whose score exceeds ``outlier_threshold``."""
        scores = self.outlier_scores()
        return [int(k) for k in np.flatnonzero(scores > self.hyper["outlier_threshold"])]

    def _outlier_norms(self) -> np.ndarray:
        raise NotImplementedError

    def _relation(self) -> np.ndarray:
        W = self._task_weights()
        assert W is not None
        return cosine_similarity(W)
