"""The compiled front of the OMTL, ROM and ELLA families.

:class:`CompiledLearner` — the per-event and batch entry points of a learner
whose test-then-train pass is one kernel call (:meth:`CompiledLearner._kernel`),
keeping its numpy path as ``_learn_reference`` and
``_score_and_learn_batch_reference``.

The row primitives these kernels share (:class:`KernelRows`, :func:`row_dot`,
:func:`row_axpy`, :func:`vec_dot`, :func:`warm_learners`) live with the other
shared numba helpers in :mod:`learners.kernels`; they are imported here too, so
``from learners.omtl.compiled import KernelRows`` keeps working.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from learners.base import Learner
from learners.inputs import Batch, Vec, check_label, check_task
from learners.kernels import KernelRows, row_axpy, row_dot, vec_dot, warm_learners

__all__ = ["CompiledLearner", "KernelRows", "row_axpy", "row_dot", "vec_dot", "warm_learners"]


class CompiledLearner(Learner):
    """A learner whose sequential test-then-train pass is one kernel call.

    Subclasses implement :meth:`_kernel` (scores into ``scores``, state updated in
    place, rows in stream order) and :meth:`_learn_reference` (the numpy round the
    kernel is tested against). ``_decision`` must sum like the kernel
    (:func:`vec_dot`) so that ``score_and_learn_one`` equals ``decision_one``
    followed by ``learn_one`` bit for bit.
    """

    #: A NaN or infinite value of a row makes its score NaN or infinite (checked by
    #: :func:`learners.checks.common.check_bad_values_of_a_large_batch`).
    scores_show_bad_values: ClassVar[bool] = True
    #: The per-event call is the batch kernel on one row (:meth:`score_and_learn_one`).
    per_event_equals_batch: ClassVar[bool] = True

    def _kernel(
        self, rows: KernelRows, y: np.ndarray, tasks: np.ndarray, scores: np.ndarray
    ) -> None:
        raise NotImplementedError

    def _learn_reference(self, x: Vec, y: float, task: int) -> None:
        raise NotImplementedError

    def score_and_learn_one(self, x: Any, y: float, task: int) -> float:
        """Test-then-train on one example: one validation, one kernel call."""
        t = check_task(task, self.n_tasks)
        label = check_label(y, self.label_kind)
        score = np.empty(1)
        self._kernel(
            KernelRows.of_vec(self._prepare(x)),
            np.array([label]),
            np.array([t], dtype=np.int64),
            score,
        )
        return float(score[0])

    def _learn(self, x: Vec, y: float, task: int) -> None:
        self._kernel(
            KernelRows.of_vec(x), np.array([y]), np.array([task], dtype=np.int64), np.empty(1)
        )

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        scores = np.empty(batch.n)
        self._kernel(KernelRows.of_batch(batch), y, tasks, scores)
        return scores

    def _score_and_learn_batch_reference(
        self, batch: Batch, y: np.ndarray, tasks: np.ndarray
    ) -> np.ndarray:
        """The numpy path, row by row: ``_decision`` then ``_learn_reference``."""
        scores = np.empty(batch.n)
        for i, (v, label, t) in enumerate(
            zip(batch.rows(), y.tolist(), tasks.tolist(), strict=True)
        ):
            scores[i] = self._decision(v, t)
            self._learn_reference(v, label, t)
        return scores
