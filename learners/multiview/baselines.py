"""The baselines of cavallanti2010 Secs. 6-7 on multiview rounds.

* ``multiview-independent`` — K independent Perceptrons, one per view. With
  ``labels="shared"`` (the multiview protocol of Sec. 7) the round's score is the
  sum of the K margins ``sum_j v_j^T x_{j,t}`` and every view's Perceptron updates
  on its own mistake ``SGN(v_j^T x_{j,t}) != y_t`` (the "K Perceptrons in
  parallel" baseline of the remark after Theorem 10); with ``labels="per_task"``
  (the protocol of Sec. 6) task ``i_t`` predicts with its own Perceptron only
  (MMPERC at ``b = 0``).
* ``multiview-concat`` — one Perceptron on the concatenated instance
  ``phi_t = (x_{1,t}, ..., x_{K,t})`` (the 2p-norm matrix Perceptron at p = 1).

Both accept tasks of different dimensions (``task_dims``). docs/algorithms.md
Secs. 1.5-1.6.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from learners.base import APPEND_BIAS, L2_NORMALIZE, Param
from learners.multiview.contract import TASK_DIMS, MultiviewLearner
from learners.params import one_of
from learners.perceptron.multitask import CAVALLANTI2010, is_mistake
from learners.registry import register

__all__ = ["ConcatenatedPerceptron", "IndependentViewPerceptrons"]


class _ConcatenatedWeights(MultiviewLearner):
    """A weight vector ``w`` over the concatenated round (view ``j`` in block ``j``)."""

    state_fields: ClassVar[tuple[str, ...]] = ("dims_", "w_", "n_mistakes_")

    w_: np.ndarray
    n_mistakes_: int

    def _init_views_state(self) -> None:
        self.w_ = np.zeros(self.total_dim)
        self.n_mistakes_ = 0

    def _grow(self, old_total: int) -> None:
        self.w_ = np.concatenate([self.w_, np.zeros(self.total_dim - old_total)])

    def _task_weights(self) -> np.ndarray | None:
        if not self.uniform_dims:
            return None
        return self.w_.reshape(self._n_tasks, self.dim).copy()


@register
class IndependentViewPerceptrons(_ConcatenatedWeights):
    """K independent Perceptrons, one per view (cavallanti2010 Secs. 6-7 baseline).

    ``labels="shared"``: score ``sum_j v_j^T x_{j,t}``; every view's Perceptron
    learns from its own mistake. ``labels="per_task"``: task ``i_t`` predicts and
    learns with its own Perceptron (MMPERC with ``b = 0``).
    """

    name = "multiview-independent"
    summary = "Multiview baseline: K independent Perceptrons (sum of margins, or the task's own)"
    paper = f"{CAVALLANTI2010} (Secs. 6-7, baseline)"
    params: ClassVar[tuple[Param, ...]] = (
        Param(
            "labels",
            "shared",
            "shared: one label for all views, score = sum of the K margins; per_task: the "
            "round's task predicts with its own Perceptron.",
            one_of("shared", "per_task"),
        ),
        TASK_DIMS,
        APPEND_BIAS,
        L2_NORMALIZE,
    )
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"labels": "per_task", "append_bias": True, "l2_normalize": True},
    )

    def _decision_views(self, phi: np.ndarray, task: int) -> float:
        if self.hyper["labels"] == "per_task":
            block = self.view_slice(task)
            return float(self.w_[block] @ phi[block])
        return float(self.w_ @ phi)

    def _learn_views(self, phi: np.ndarray, y: float, task: int) -> None:
        views = [task] if self.hyper["labels"] == "per_task" else range(self._n_tasks)
        for j in views:
            block = self.view_slice(j)
            if is_mistake(float(self.w_[block] @ phi[block]), y):
                self.w_[block] += y * phi[block]
                self.n_mistakes_ += 1


@register
class ConcatenatedPerceptron(_ConcatenatedWeights):
    """One Perceptron on the concatenated multiview instance (cavallanti2010 Sec. 7 baseline).

    Score ``w^T phi_t``; on a mistake ``w <- w + y_t phi_t``. Equals the 2p-norm
    matrix Perceptron with ``p = 1``.
    """

    name = "multiview-concat"
    summary = "Multiview baseline: one Perceptron on the concatenated instance"
    paper = f"{CAVALLANTI2010} (Sec. 7, p = 1 baseline)"
    params: ClassVar[tuple[Param, ...]] = (TASK_DIMS, APPEND_BIAS, L2_NORMALIZE)
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"append_bias": True, "l2_normalize": True},
    )

    def _decision_views(self, phi: np.ndarray, task: int) -> float:
        return float(self.w_ @ phi)

    def _learn_views(self, phi: np.ndarray, y: float, task: int) -> None:
        if is_mistake(float(self.w_ @ phi), y):
            self.w_ += y * phi
            self.n_mistakes_ += 1
