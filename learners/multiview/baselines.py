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

An interleaved event ``(x, task)`` is the round whose other views are zero
(:mod:`learners.multiview.contract`); both baselines learn it in O(nnz(x)),
touching only the task's block of ``w``, and a batch of such events in one
compiled pass (:func:`learners.multiview.kernels.lone_view_pass`). Every margin is
a view's block summed in feature order (:func:`learners.kernels.row_dot`),
so an event gives the numbers of that round, bit for bit.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from learners.active.kernels import kernel_rows
from learners.base import APPEND_BIAS, L2_NORMALIZE, Param
from learners.inputs import Batch, Vec, check_label, check_task
from learners.kernels import kernel_array, row_axpy, row_dot
from learners.multiview.contract import TASK_DIMS, MultiviewLearner
from learners.multiview.kernels import lone_view_pass
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

    def _zero_views_err(self) -> bool:
        """Whether the K - 1 zero views of an interleaved event each count a mistake on a
        negative label (their margin 0 predicts +1): when every view learns the round's
        label (multiview-independent with shared labels)."""
        return False

    # ------------------------------------------------------------ the views' margins
    def _block(self, j: int) -> np.ndarray:
        """View j's block of ``w`` (a view)."""
        return self.w_[self.view_slice(j)]

    def _margin(self, phi: np.ndarray, j: int) -> float:
        """View j's margin ``w_j^T phi_j`` of a concatenated round."""
        return float(row_dot(None, phi[self.view_slice(j)], self._block(j)))

    def _round_score(self, phi: np.ndarray) -> float:
        """``w^T phi`` as the sum of the views' margins, in view order."""
        return sum((self._margin(phi, j) for j in range(self._n_tasks)), 0.0)

    def _update_view(self, phi: np.ndarray, j: int, y: float) -> None:
        """``w_j += y phi_j``."""
        row_axpy(None, phi[self.view_slice(j)], self._block(j), y)

    # ------------------------------------------------------------ interleaved events
    def decision_one(self, x: Any, task: int) -> float:
        t = check_task(task, self._n_tasks)
        return self._decision(self._prepare_vec(x, t), t)

    def learn_one(self, x: Any, y: float, task: int) -> None:
        t = check_task(task, self._n_tasks)
        label = check_label(y, self.label_kind)
        self._learn(self._prepare_vec(x, t), label, t)

    def query_one(self, x: Any, task: int) -> bool:
        self._prepare_vec(x, check_task(task, self._n_tasks))
        return True

    def _decision(self, x: Vec, task: int) -> float:
        return float(row_dot(x.idx, x.val, self._block(task)))

    def _learn(self, x: Vec, y: float, task: int) -> None:
        if self._zero_views_err() and not y > 0.0:
            self.n_mistakes_ += self._n_tasks - 1
        block = self._block(task)
        if is_mistake(float(row_dot(x.idx, x.val, block)), y):
            row_axpy(x.idx, x.val, block, y)
            self.n_mistakes_ += 1

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        scores, mistakes = lone_view_pass(
            kernel_rows(batch),
            kernel_array(y, np.float64),
            kernel_array(tasks, np.int64),
            self._offsets,
            self.w_,
            self._zero_views_err(),
        )
        self.n_mistakes_ += int(mistakes)
        return scores


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

    def _zero_views_err(self) -> bool:
        return bool(self.hyper["labels"] == "shared")

    def _decision_views(self, phi: np.ndarray, task: int) -> float:
        if self.hyper["labels"] == "per_task":
            return self._margin(phi, task)
        return self._round_score(phi)

    def _learn_views(self, phi: np.ndarray, y: float, task: int) -> None:
        views = [task] if self.hyper["labels"] == "per_task" else range(self._n_tasks)
        for j in views:
            if is_mistake(self._margin(phi, j), y):
                self._update_view(phi, j, y)
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
        return self._round_score(phi)

    def _learn_views(self, phi: np.ndarray, y: float, task: int) -> None:
        if is_mistake(self._round_score(phi), y):
            for j in range(self._n_tasks):
                self._update_view(phi, j, y)
            self.n_mistakes_ += 1
