"""The multiview round contract: :class:`MultiviewLearner`.

Cavallanti, Cesa-Bianchi & Gentile (2010), Secs. 6-7, use a different protocol
from the interleaved ``(x_t, i_t)`` stream (docs/algorithms.md Sec. 0, protocol
type 2): every round reveals a task index ``i_t`` **and all K instances**
``x_{1,t}, ..., x_{K,t}`` (one per task or view; view ``j`` has its own
dimension ``d_j``), then one label. The names follow the single-instance
contract of :class:`learners.base.Learner`:

* ``decision_views(views, task) -> float`` — the score of the round, never
  mutating; ``predict_views`` its sign (ties give +1);
* ``learn_views(views, y, task)`` — learn the round's label;
* ``score_and_learn_views(views, y, task)`` — test-then-train;
* ``query_views(views, task)`` — the active decision; the learners of this
  family are passive (the papers give none), so it validates and answers True;
* ``score_and_learn_views_many(views, y, task)`` — a batch of rounds, ``views``
  being K matrices of shape ``(n, d_j)``; equal to the rounds one by one.

``views`` is a sequence (list or tuple) of exactly K instances, each in any
form :func:`learners.inputs.as_vector` accepts (dense 1-D array, ``1 x d_j``
CSR row, ``(indices, values)`` pair). Bad input raises ``ValueError`` before
any state changes. The preprocessing flags of Sec. 0 apply **per view**:
``append_bias`` appends a 1 to every view, ``l2_normalize`` scales every view
to unit norm (the papers assume ``||x_{j,t}|| = 1``).

Internally a round is the concatenation ``phi_t = sum_j phi_{j,t}`` of the
preprocessed views (length ``D = sum_j d_j``, view ``j`` in block ``j``), the
compound vector of cavallanti2010 Sec. 6.

**Interleaved events.** A single-instance call ``learn_one(x, y, task)`` is
the multiview round in which only view ``task`` was observed: every other view
is the zero vector (so it contributes nothing to any margin or inner product).
This keeps every multiview learner usable on today's interleaved streams and
services; the papers' gains need the full rounds.

**Task dimensions.** ``task_dims`` (where a learner offers it) lists the
dimensions of the first ``len(task_dims)`` tasks; every other task, including
tasks added later by :meth:`Learner.add_task`, has dimension ``n_features``.
The current dimensions are part of the state (``dims_``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from learners.base import Learner, Param
from learners.inputs import Batch, Vec, as_vector, check_label, check_task

__all__ = ["TASK_DIMS", "MultiviewLearner", "task_dims"]


def task_dims(v: Any) -> tuple[int, ...] | None:
    """Validator of ``task_dims``: None, or a non-empty sequence of positive integers."""
    if v is None:
        return None
    arr = np.asarray(v)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ValueError(f"must be a non-empty sequence of positive integers, got {v!r}")
    if not np.issubdtype(arr.dtype, np.number) or not np.all(np.mod(arr, 1) == 0):
        raise ValueError(f"must hold integers, got {v!r}")
    if arr.min() < 1:
        raise ValueError(f"dimensions must be >= 1, got {v!r}")
    return tuple(int(a) for a in arr)


TASK_DIMS = Param(
    "task_dims",
    None,
    "Dimensions d_j of the first len(task_dims) tasks (tasks in heterogeneous spaces); "
    "every other task, including added ones, has n_features. None: all tasks have n_features.",
    task_dims,
)


class MultiviewLearner(Learner):
    """Base class of the learners that take all K instances per round (module docstring).

    A subclass implements :meth:`_decision_views` and :meth:`_learn_views` on the
    concatenated preprocessed round ``phi`` (length :attr:`total_dim`), plus
    :meth:`_init_views_state` and :meth:`_grow` (one task added). It may replace
    :meth:`_score_and_learn_rounds` by a compiled pass.
    """

    #: A NaN or infinite value of a row makes its score NaN or infinite (checked by
    #: :func:`learners.checks.common.check_bad_values_of_a_large_batch`).
    scores_show_bad_values: ClassVar[bool] = True
    #: Declared capability: this learner consumes multiview rounds (all K instances).
    multiview: ClassVar[bool] = True

    dims_: np.ndarray
    _offsets: np.ndarray
    #: ``dims_`` and ``_offsets`` as Python ints, for the per-round calls (an int of a
    #: numpy scalar costs about 0.1 us; a round reads K of each)
    _dim_list: list[int]
    _offset_list: list[int]

    # ------------------------------------------------------------ shape
    def _init_state(self) -> None:
        given = self.hyper.get("task_dims")
        dims = [self._n_features] * self._n_tasks
        if given is not None:
            if len(given) > self._n_tasks:
                raise ValueError(
                    f"task_dims lists {len(given)} tasks but the learner has {self._n_tasks}"
                )
            dims[: len(given)] = list(given)
        self.dims_ = np.asarray(dims, dtype=np.int64)
        self._refresh_offsets()
        self._init_views_state()

    def _refresh_offsets(self) -> None:
        widths = self.dims_ + (1 if self._bias else 0)
        self._offsets = np.concatenate(([0], np.cumsum(widths))).astype(np.int64)
        self._dim_list = self.dims_.tolist()
        self._offset_list = self._offsets.tolist()

    @property
    def view_dims(self) -> list[int]:
        """Raw input dimension ``d_j`` of every view (before the optional bias)."""
        return list(self._dim_list)

    @property
    def total_dim(self) -> int:
        """``D``: length of the concatenated preprocessed round ``phi``."""
        return self._offset_list[-1]

    def view_slice(self, task: int) -> slice:
        """The block of view ``task`` inside ``phi``."""
        return slice(self._offset_list[task], self._offset_list[task + 1])

    @property
    def uniform_dims(self) -> bool:
        """Whether every task has dimension ``n_features``."""
        return bool(np.all(self.dims_ == self._n_features))

    def _add_task(self) -> None:
        self.dims_ = np.append(self.dims_, np.int64(self._n_features))
        old_total = self.total_dim
        self._refresh_offsets()
        self._grow(old_total)

    def _set_state(self, state: Mapping[str, Any]) -> None:
        super()._set_state(state)
        self.dims_ = np.asarray(self.dims_, dtype=np.int64).reshape(-1)
        self._refresh_offsets()

    # ------------------------------------------------------------ input
    def _prepare_vec(self, x: Any, task: int) -> Vec:
        """Validate view ``task`` and return it preprocessed (dense or sparse, as given)."""
        v = as_vector(x, self._dim_list[task])
        if self._bias:
            v = v.with_bias()
        if self._normalize:
            n2 = v.sqnorm()
            if n2 > 0.0:
                v = v.scaled(1.0 / np.sqrt(n2))
        return v

    def _prepare_view(self, x: Any, task: int) -> np.ndarray:
        """Validate view ``task`` and return it preprocessed, dense."""
        return self._prepare_vec(x, task).dense()

    def _prepare_views(self, views: Any) -> np.ndarray:
        """Validate the K views of a round and return the concatenated ``phi``."""
        if isinstance(views, str | bytes | Mapping) or not isinstance(views, Sequence):
            raise ValueError("views must be a list or tuple with one instance per task")
        K = self._n_tasks
        if len(views) != K:
            raise ValueError(f"a round needs {K} views (one per task), got {len(views)}")
        phi = np.empty(self.total_dim)
        for j, x in enumerate(views):
            try:
                phi[self.view_slice(j)] = self._prepare_view(x, j)
            except ValueError as exc:
                raise ValueError(f"view {j}: {exc}") from None
        return phi

    def _lone(self, x: Any, task: int) -> np.ndarray:
        """The round of an interleaved event: view ``task`` is ``x``, the others are zero."""
        phi = np.zeros(self.total_dim)
        phi[self.view_slice(task)] = self._prepare_view(x, task)
        return phi

    def _lone_vec(self, v: Vec, task: int) -> np.ndarray:
        phi = np.zeros(self.total_dim)
        phi[self.view_slice(task)] = v.dense()
        return phi

    # ------------------------------------------------------------ multiview API
    def decision_views(self, views: Any, task: int) -> float:
        """Signed score of the round for ``task``; never mutates the learner."""
        t = check_task(task, self._n_tasks)
        return float(self._decision_views(self._prepare_views(views), t))

    def predict_views(self, views: Any, task: int) -> int:
        """Predicted label of the round: ``+1``/``-1`` (ties give ``+1``)."""
        return 1 if self.decision_views(views, task) >= 0.0 else -1

    def learn_views(self, views: Any, y: float, task: int) -> None:
        """Learn the round's label. Bad input raises ``ValueError`` and changes nothing."""
        t = check_task(task, self._n_tasks)
        label = check_label(y, self.label_kind)
        self._learn_views(self._prepare_views(views), label, t)

    def score_and_learn_views(self, views: Any, y: float, task: int) -> float:
        """Test-then-train on one round: the score before learning, then learn."""
        t = check_task(task, self._n_tasks)
        label = check_label(y, self.label_kind)
        phi = self._prepare_views(views)
        score = float(self._decision_views(phi, t))
        self._learn_views(phi, label, t)
        return score

    def query_views(self, views: Any, task: int) -> bool:
        """The active decision; this family is passive: validates and answers True."""
        check_task(task, self._n_tasks)
        self._prepare_views(views)
        return True

    def score_and_learn_views_many(self, views: Any, y: Any, task: Any) -> np.ndarray:
        """Test-then-train over a batch of rounds; returns each round's score before learning.

        ``views`` holds K matrices (dense or scipy sparse), view ``j`` of shape
        ``(n, d_j)``; ``y`` n labels; ``task`` one index or n of them. The whole
        batch is validated first, so a bad round changes nothing.
        """
        Phi, labels, tasks = self._prepare_rounds(views, y, task)
        return self._score_and_learn_rounds(Phi, labels, tasks)

    def learn_views_many(self, views: Any, y: Any, task: Any) -> None:
        """Learn a batch of rounds (see :meth:`score_and_learn_views_many`)."""
        self.score_and_learn_views_many(views, y, task)

    def _prepare_rounds(self, views: Any, y: Any, task: Any) -> tuple[np.ndarray, np.ndarray, Any]:
        if isinstance(views, str | bytes | Mapping) or not isinstance(views, Sequence):
            raise ValueError("views must be a list or tuple with one matrix per task")
        K = self._n_tasks
        if len(views) != K:
            raise ValueError(f"a batch of rounds needs {K} view matrices, got {len(views)}")
        blocks = []
        n: int | None = None
        for j, X in enumerate(views):
            mat = X if sp.issparse(X) else np.asarray(X, dtype=np.float64)
            if mat.ndim != 2:
                raise ValueError(f"view {j}: a batch view must be 2-D, got shape {mat.shape}")
            if n is None:
                n = int(mat.shape[0])
            elif mat.shape[0] != n:
                raise ValueError(f"view {j} has {mat.shape[0]} rows, view 0 has {n}")
            try:
                batch = Batch.from_input(mat, int(self.dims_[j]))
            except ValueError as exc:
                raise ValueError(f"view {j}: {exc}") from None
            blocks.append(batch.preprocessed(self._bias, self._normalize).to_dense())
        n = int(n or 0)
        # labels and tasks are checked as for interleaved batches (the rows are placeholders)
        _, labels, tasks = Learner._prepare_batch(self, np.zeros((n, self._n_features)), y, task)
        Phi = np.hstack(blocks) if blocks else np.zeros((n, 0))
        return np.ascontiguousarray(Phi), labels, tasks

    def _score_and_learn_rounds(
        self, Phi: np.ndarray, y: np.ndarray, tasks: np.ndarray
    ) -> np.ndarray:
        """Reference batch path: round by round with the numpy hooks."""
        scores = np.empty(Phi.shape[0])
        for r in range(Phi.shape[0]):
            t = int(tasks[r])
            scores[r] = self._decision_views(Phi[r], t)
            self._learn_views(Phi[r], float(y[r]), t)
        return scores

    # ------------------------------------------------------------ interleaved events
    def decision_one(self, x: Any, task: int) -> float:
        """Score of the round in which only view ``task`` (= ``x``) was observed."""
        t = check_task(task, self._n_tasks)
        return float(self._decision_views(self._lone(x, t), t))

    def learn_one(self, x: Any, y: float, task: int) -> None:
        """Learn the round in which only view ``task`` (= ``x``) was observed."""
        t = check_task(task, self._n_tasks)
        label = check_label(y, self.label_kind)
        self._learn_views(self._lone(x, t), label, t)

    def query_one(self, x: Any, task: int) -> bool:
        """Passive: validates ``x`` for ``task`` and answers True."""
        t = check_task(task, self._n_tasks)
        self._lone(x, t)
        return True

    def _decision(self, x: Vec, task: int) -> float:
        return float(self._decision_views(self._lone_vec(x, task), task))

    def _learn(self, x: Vec, y: float, task: int) -> None:
        self._learn_views(self._lone_vec(x, task), y, task)

    def _prepare_batch(
        self, X: Any, y: Any, task: Any, *, check_finite: bool = True, raw: bool = False
    ) -> tuple[Batch, np.ndarray, np.ndarray]:
        batch, labels, tasks = super()._prepare_batch(
            X, y, task, check_finite=check_finite, raw=raw
        )
        if tasks.shape[0] and not np.all(self.dims_[tasks] == self._n_features):
            raise ValueError(
                "a batch of interleaved rows may only hold tasks of dimension n_features; "
                "use learn_one or the multiview rounds for the others"
            )
        return batch, labels, tasks

    # ------------------------------------------------------------ subclass hooks
    def _init_views_state(self) -> None:
        """Allocate the learned state for the current dimensions."""
        raise NotImplementedError

    def _grow(self, old_total: int) -> None:
        """One task was appended: ``phi`` grew from ``old_total`` to :attr:`total_dim`."""
        raise NotImplementedError

    def _decision_views(self, phi: np.ndarray, task: int) -> float:
        """Score of the concatenated preprocessed round ``phi`` for ``task``."""
        raise NotImplementedError

    def _learn_views(self, phi: np.ndarray, y: float, task: int) -> None:
        """Update from one validated round."""
        raise NotImplementedError
