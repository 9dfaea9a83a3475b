"""What the compiled paths of the OMTL, ROM and ELLA families share.

* :class:`KernelRows` — a validated batch (or one canonical vector) in the form
  the kernels take: a dense C-ordered array, or CSR arrays with int64 indices;
* :func:`row_dot` / :func:`row_axpy` — compiled row
  primitives; ``idx is None`` means a dense row (numba prunes the other branch);
* :func:`vec_dot` — ``<x, w>`` summed in the kernels' order, so that a
  ``decision_one`` equals the kernel's score bit for bit;
* :class:`CompiledLearner` — the per-event and batch entry points of a learner
  whose test-then-train pass is one kernel call (:meth:`CompiledLearner._kernel`),
  keeping its numpy path as ``_learn_reference`` and
  ``_score_and_learn_batch_reference``.

Nothing here is specific to one family; it sits in :mod:`learners.omtl` only
until the project's shared numba helpers exist.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import njit

from learners.base import Learner
from learners.inputs import Batch, Vec, canonical_row, check_label, check_task

__all__ = ["CompiledLearner", "KernelRows", "row_axpy", "row_dot", "vec_dot", "warm_learners"]


@njit(cache=True)
def row_dot(idx: Any, val: np.ndarray, w: np.ndarray) -> float:
    """``sum_p val[p] w[idx[p]]`` (``idx`` None: ``sum_f val[f] w[f]``), in index order."""
    s = 0.0
    if idx is None:
        for f in range(val.shape[0]):
            s += val[f] * w[f]
    else:
        for p in range(val.shape[0]):
            s += val[p] * w[idx[p]]
    return s


@njit(cache=True)
def row_axpy(idx: Any, val: np.ndarray, w: np.ndarray, a: float) -> None:
    """``w += a x`` in place, O(nnz)."""
    if idx is None:
        for f in range(val.shape[0]):
            w[f] += a * val[f]
    else:
        for p in range(val.shape[0]):
            w[idx[p]] += a * val[p]


@njit(cache=True)
def _dot_dense(val: np.ndarray, w: np.ndarray) -> float:
    return row_dot(None, val, w)


@njit(cache=True)
def _dot_sparse(idx: np.ndarray, val: np.ndarray, w: np.ndarray) -> float:
    return row_dot(idx, val, w)


def vec_dot(x: Vec, w: np.ndarray) -> float:
    """``<x, w>`` summed in the kernels' order (bit-identical to a kernel's score)."""
    if x.idx is None:
        return float(_dot_dense(x.val, w))
    return float(_dot_sparse(x.idx, x.val, w))


def warm_learners(*classes: type[Learner]) -> float:
    """Compile (or load from the cache) the kernels of ``classes``; returns the seconds taken.

    Each class learns a tiny dense batch, the same batch as CSR, one dense and one
    sparse event: every kernel specialisation the learners use, with their own types.
    """
    start = time.perf_counter()
    X = np.array([[1.0, 0.5, -1.0], [0.0, 2.0, 1.0]])
    y = np.array([1.0, -1.0])
    tasks = np.array([0, 1], dtype=np.int64)
    for cls in classes:
        learner = cls(n_features=3, n_tasks=2)
        learner.score_and_learn_many(X, y, tasks)
        learner.score_and_learn_many(sp.csr_matrix(X), y, tasks)
        for row, label, task in zip(X, y.tolist(), tasks.tolist(), strict=True):
            learner.score_and_learn_one(row, label, task)
            learner.decision_one(row, task)
    return time.perf_counter() - start


_NO_ROWS = np.zeros((0, 0))
_NO_INDEX = np.zeros(0, dtype=np.int64)
_NO_VALUES = np.zeros(0)


class KernelRows:
    """A batch in the form the kernels take: a dense C-ordered array or CSR arrays (int64)."""

    __slots__ = ("data", "dense", "dim", "indices", "indptr")

    def __init__(
        self,
        dense: np.ndarray | None,
        csr: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
        dim: int,
    ) -> None:
        self.dense = dense
        self.indptr: np.ndarray | None = None
        self.indices: np.ndarray | None = None
        self.data: np.ndarray | None = None
        if csr is not None:
            self.indptr, self.indices, self.data = csr
        self.dim = dim

    @property
    def n(self) -> int:
        """Number of rows."""
        if self.dense is not None:
            return int(self.dense.shape[0])
        assert self.indptr is not None
        return int(self.indptr.shape[0] - 1)

    @classmethod
    def of_batch(cls, batch: Batch) -> KernelRows:
        """The rows of a validated, preprocessed :class:`~learners.inputs.Batch`."""
        if batch.dense is not None:
            return cls(np.ascontiguousarray(batch.dense, dtype=np.float64), None, batch.dim)
        csr = batch.csr
        assert csr is not None
        arrays = (
            np.asarray(csr.indptr, dtype=np.int64),
            np.asarray(csr.indices, dtype=np.int64),
            np.ascontiguousarray(csr.data, dtype=np.float64),
        )
        return cls(None, arrays, batch.dim)

    @classmethod
    def of_vec(cls, x: Vec) -> KernelRows:
        """One canonical vector as a one-row batch (no copy of its values)."""
        if x.idx is None:
            return cls(x.val.reshape(1, -1), None, x.dim)
        indptr = np.array([0, x.idx.shape[0]], dtype=np.int64)
        return cls(None, (indptr, np.asarray(x.idx, dtype=np.int64), x.val), x.dim)

    def kernel_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(X, indptr, indices, data)`` with typed placeholders for the absent form.

        A kernel taking all four tests ``indptr.shape[0] > 0`` for CSR rows; the
        placeholders keep every argument an array, so each kernel compiles once.
        """
        if self.dense is not None:
            return self.dense, _NO_INDEX, _NO_INDEX, _NO_VALUES
        assert self.indptr is not None and self.indices is not None and self.data is not None
        return _NO_ROWS, self.indptr, self.indices, self.data

    def vec(self, i: int) -> Vec:
        """Row ``i`` as the canonical :class:`~learners.inputs.Vec` the reference path sees."""
        if self.dense is not None:
            return canonical_row(self.dense[i], self.dim)
        assert self.indptr is not None and self.indices is not None and self.data is not None
        lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
        val = self.data[lo:hi].copy()
        if hi - lo == self.dim:
            return Vec(None, val, self.dim)
        return Vec(self.indices[lo:hi].copy(), val, self.dim)


class CompiledLearner(Learner):
    """A learner whose sequential test-then-train pass is one kernel call.

    Subclasses implement :meth:`_kernel` (scores into ``scores``, state updated in
    place, rows in stream order) and :meth:`_learn_reference` (the numpy round the
    kernel is tested against). ``_decision`` must sum like the kernel
    (:func:`vec_dot`) so that ``score_and_learn_one`` equals ``decision_one``
    followed by ``learn_one`` bit for bit.
    """

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
