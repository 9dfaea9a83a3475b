"""The compiled front of the linear Perceptron family: lean public calls, one kernel.

:class:`CompiledLinear` is mixed in front of a numpy *reference* class (the
slow implementation that defines the mathematics, kept for the kernel check of
:mod:`learners.checks.kernels`). It

* packs the reference's weight arrays (``_weight_fields``, e.g. ``W_`` or
  ``V_`` and ``s_``) into one C-ordered buffer and rebinds the attributes to
  views of it, so the kernel and the reference see the same numbers;
* runs every score and update through :func:`learners.perceptron.kernels.step`
  (one event) or the batch kernels (``score_and_learn_many``), row by row in
  stream order;
* gives the per-event calls a fast lane: a C-contiguous float64 ``x`` of the
  right length, an ``int`` or ``numpy.int64`` task and a ``+-1`` label (``int``,
  ``float`` or ``numpy.float64``: what a loop over numpy arrays hands over) go
  straight to the kernel, which checks finiteness as part of its pass (a
  non-finite score changes nothing and is then reported as bad input). A float32
  or read-only ``x`` of the right length (the rows the worker reads from the log)
  takes the lane as a float64 copy, the values the general validation would
  convert it to (0.9 us per ``decision_one`` at d = 100, against 3.4 us through the
  general validation). Any other input takes the general validation of
  :class:`learners.base.Learner`.
  The lane calls the kernels' machine code for exactly those argument types
  (:func:`_entry`), which skips numba's per-call type dispatch: with it a Python
  loop of ``predict_one`` + ``learn_one`` costs less than the plain numpy loop
  (predict with ``W[t] @ x``, update on a mistake) it replaces
  (docs/architecture.md, "Compiled learner kernels").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Any, ClassVar, NoReturn

import numpy as np
import scipy.sparse as sp

from learners.base import Learner
from learners.inputs import Batch, Vec, as_vector, check_label, check_task
from learners.kernels import batch_rows, csr_arrays, kernel_array, row_of
from learners.perceptron.kernels import (
    BAD_INPUT,
    decide_dense,
    learn_csr,
    learn_csr_checked,
    learn_dense,
    learn_dense_checked,
    learn_one_dense,
    step,
)

__all__ = ["CompiledLinear"]

_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)
_I32 = np.dtype(np.int32)
_NO_MATRIX = np.zeros((1, 1))
_INF = math.inf
_ONE = (1,)


#: The argument types of the lean per-event kernels: rule, weight buffer, (matrix,) row,
#: (label,) task, p0, p1.
_DECIDE_SIGNATURE = "float64(int64, float64[:, ::1], float64[::1], int64, float64, float64)"
_LEARN_SIGNATURE = (
    "float64(int64, float64[:, ::1], float64[:, ::1], float64[::1],"
    " float64, int64, float64, float64)"
)


_ENTRIES: dict[tuple[int, str], Any] = {}


def _entry(dispatcher: Any, signature: str) -> Any:
    """The machine-code entry point of a numba kernel for one exact signature (compiled,
    or loaded from the on-disk cache, at its first use in the process). Calling it skips
    the type dispatch numba does on every call of the kernel itself (100-150 ns of a
    1-2 us event); it is only called with arguments of exactly these types, which
    :func:`_lean` and the learner's own buffers guarantee."""
    key = (id(dispatcher), signature)
    entry = _ENTRIES.get(key)
    if entry is None:
        entry = _ENTRIES[key] = dispatcher.compile(signature)
    return entry


def _lean(x: Any, shape: tuple[int, ...] | None, task: Any, n_tasks: int) -> bool:
    """Whether ``(x, task)`` may skip the general validation (module docstring)."""
    return (
        type(x) is np.ndarray
        and x.dtype is _F64
        and x.shape == shape
        and x.flags.carray
        and type(task) is int
        and 0 <= task < n_tasks
    )


def _lean_copy(x: Any, shape: tuple[int, ...] | None) -> np.ndarray | None:
    """A float64 copy of a float32 or float64 array ``x`` of the lean ``shape`` that is not
    a lean row itself (float32, read-only or strided: the rows the worker reads from the
    log are read-only float32), else None. The copy holds the values the general
    validation would convert ``x`` to."""
    if type(x) is np.ndarray and x.shape == shape and (x.dtype is _F32 or x.dtype is _F64):
        return np.array(x, dtype=np.float64)
    return None


class CompiledLinear(Learner):
    """Mixin: run a linear reference learner on the compiled kernel (module docstring)."""

    #: The per-event calls run the batch kernel's own step (:func:`step`).
    per_event_equals_batch: ClassVar[bool] = True

    #: The kernel rule (a constant of :mod:`learners.perceptron.kernels`).
    kernel_kind: ClassVar[int]
    #: Attributes holding the weight rows, in buffer order (each ``(k, d)`` or ``(d,)``).
    weight_fields: ClassVar[tuple[str, ...]]
    #: The attribute counting updates.
    update_counter: ClassVar[str] = "n_mistakes_"
    #: The rule reads a float32 row exactly (every product has a float64 weight factor).
    float32_rows: ClassVar[bool] = True

    #: The rule updates exactly on a mistake (:meth:`_updated` not overridden): the lean
    #: lane then counts updates without calling it. Set for every subclass.
    _mistake_driven: ClassVar[bool] = True

    _S: np.ndarray
    _A: np.ndarray
    _decide: Any
    _learn_dense: Any
    _p0: float
    _p1: float
    _x_shape: tuple[int, ...] | None
    _row_shape: tuple[int, int] | None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._mistake_driven = cls._updated is CompiledLinear._updated

    @property
    def reads_readonly_rows(self) -> bool:
        """Whether a batch of read-only float32 rows (e.g. a view of the bytes a log entry
        arrived in) is read in place, without a copy: where :attr:`float32_rows`,
        :func:`~learners.perceptron.kernels.learn_dense_checked` is compiled for it too."""
        return self.float32_rows

    @property
    def exact_batch_merge(self) -> bool:
        """Whether ``score_and_learn_many`` gives bit-identical results however a stream
        is cut into batches, so that a caller may merge consecutive batches into one
        call: every row runs through the same kernel step in order, and no batch-wide
        preprocessing (bias column, row normalisation) is involved."""
        return self._x_shape is not None

    # ------------------------------------------------------------ state
    def _init_state(self) -> None:
        super()._init_state()
        self._x_shape = None if (self._bias or self._normalize) else (self._n_features,)
        self._row_shape = None if self._x_shape is None else (1, self._n_features)
        self._adopt()

    def _in_place_fields(self) -> Collection[str]:
        """Weights are restored into their rows of the kernel buffer ``_S``, not as a copy
        that :meth:`_adopt` would then repack."""
        return self.weight_fields

    def _set_state(self, state: Any) -> None:
        super()._set_state(state)
        if all(np.may_share_memory(getattr(self, n), self._S) for n in self.weight_fields):
            self._refresh()  # every weight array was restored in place
        else:
            self._adopt()

    def add_task(self) -> int:
        index = super().add_task()
        self._adopt()
        return index

    def _adopt(self) -> None:
        """Pack the weight arrays into the kernel buffer and refresh the kernel constants."""
        parts = [np.atleast_2d(getattr(self, name)) for name in self.weight_fields]
        self._S = np.ascontiguousarray(np.vstack(parts), dtype=np.float64)
        start = 0
        for name, part in zip(self.weight_fields, parts, strict=True):
            rows = part.shape[0]
            one_d = np.ndim(getattr(self, name)) == 1
            setattr(self, name, self._S[start] if one_d else self._S[start : start + rows])
            start += rows
        self._refresh()

    def _refresh(self) -> None:
        """Recompute the kernel constants and entry points from the current state."""
        self._A = self._kernel_matrix()
        self._p0, self._p1 = self._kernel_constants()
        self._decide = _entry(decide_dense, _DECIDE_SIGNATURE)
        self._learn_dense = _entry(learn_one_dense, _LEARN_SIGNATURE)

    def _kernel_matrix(self) -> np.ndarray:
        """The ``K x K`` matrix the MATRIX rule reads (a placeholder for the other rules)."""
        return _NO_MATRIX

    def _kernel_constants(self) -> tuple[float, float]:
        """The rule's constants ``p0``, ``p1`` (see :mod:`learners.perceptron.kernels`)."""
        return 0.0, 0.0

    def _count(self, updates: int) -> None:
        setattr(self, self.update_counter, getattr(self, self.update_counter) + updates)

    def _count_learned(
        self, scores: np.ndarray, y: np.ndarray, values: Callable[[int], np.ndarray], stop: int
    ) -> None:
        """Count the updates of rows ``0 .. stop - 1`` (``values(i)``: row i's values), which a
        pass stopped by a non-finite score at row ``stop`` learned before it: the kernels
        return only the row, and the update counter must match learning the rows one by
        one. A cold path: the scores of those rows tell which of them updated."""
        updates = sum(
            1 for i in range(stop) if self._updated(float(scores[i]), float(y[i]), values(i))
        )
        if updates:
            self._count(updates)

    def _updated(self, score: float, y: float, val: np.ndarray) -> bool:
        """Whether learning ``y`` on a row (values ``val``) that scored ``score`` changed the weights.

        Mistake-driven rules: ``SGN(score) != y``. Kernels change nothing on a non-finite score.
        """
        return math.isfinite(score) and (score >= 0.0) != (y > 0.0)

    # ------------------------------------------------------------ hooks on canonical vectors
    def _run(self, v: Vec, y: float, task: int, learn: bool) -> float:
        idx, val = row_of(v)
        args = (self._S, self._A, idx, val, y, task, self._p0, self._p1, learn)
        score, changed = step(self.kernel_kind, *args)
        if changed:
            self._count(1)
        return float(score)

    def _decision(self, x: Vec, task: int) -> float:
        return self._run(x, 0.0, task, False)

    def _learn(self, x: Vec, y: float, task: int) -> None:
        self._run(x, y, task, True)

    def score_and_learn_many(self, X: Any, y: Any, task: Any) -> np.ndarray:
        """Test-then-train over a batch (see :meth:`Learner.score_and_learn_many`).

        A dense batch of the kernel's array types (:meth:`_lean_batch`) goes straight
        to :func:`~learners.perceptron.kernels.learn_dense_checked`, which checks the
        labels and task indices in the same call. A batch at least as large as the
        weights is checked for NaN/inf by the kernel pass itself (one read of ``X``
        instead of two): the weights are copied first and restored if a row turns out
        non-finite, so bad input changes nothing; a smaller one is checked up front.
        A CSR batch (``scipy.sparse.csr_matrix``, float64 values, int32 or int64
        indices) goes to :func:`~learners.perceptron.kernels.learn_csr_checked`, which
        checks in one pass that it is canonical (sorted unique in-range columns, no
        stored zeros), finite, and that labels and tasks are valid; a batch that is
        not takes the general validation, which canonicalises a copy. A row whose
        score overflows stops the pass, as in the general path: the rows before it
        have been learned, and their updates counted (a batch at least as large as the
        weights is restored whole, count included).
        Anything else, or input a check refuses, takes the general validation.

        A batch of one dense row (float64 or float32) with a ``+-1`` float64 label and
        an int64 task index in range is a per-event call: it runs the per-event lane's
        kernel step (:meth:`score_and_learn_one`), the same step as the batch kernel's,
        for 1.5 instead of 1.8-2.0 us at K = 10, d = 100: a batch call's checks and
        dispatch take longer than the row's own work (docs/architecture.md).
        """
        if (
            type(X) is np.ndarray
            and X.shape == self._row_shape
            and type(y) is np.ndarray
            and type(task) is np.ndarray
            and y.dtype is _F64
            and task.dtype is _I64
            and y.shape == _ONE
            and task.shape == _ONE
            and (X.dtype is _F64 or X.dtype is _F32)
        ):
            label, index = float(y[0]), int(task[0])
            if (label == 1.0 or label == -1.0) and 0 <= index < self._n_tasks:
                row = X[0]
                if not (row.dtype is _F64 and row.flags.carray):
                    row = np.array(row, dtype=np.float64)
                out = np.empty(1)
                out[0] = self._lean_step(row, label, index)
                return out
        if self._x_shape is not None and self._lean_batch(X, y, task):
            large = X.size >= self._S.size
            saved = self._S.copy() if large else None
            scores = np.empty(X.shape[0])
            updates = learn_dense_checked(
                self.kernel_kind, self._S, self._A, X, y, task, self._n_tasks, not large,
                self._p0, self._p1, scores,
            )  # fmt: skip
            if updates == BAD_INPUT:
                return self._score_and_learn_general(X, y, task)
            if updates < 0:
                if saved is not None:
                    self._S[...] = saved
                else:
                    self._count_learned(scores, y, X.__getitem__, -1 - updates)
                self._reject(X[-1 - updates])
            if updates:
                self._count(updates)
            return scores
        if self._x_shape is not None and self._lean_csr(X, y, task):
            scores = np.empty(X.shape[0])
            updates = learn_csr_checked(
                self.kernel_kind, self._S, self._A, X.indptr, X.indices, X.data, y, task,
                self._n_tasks, self._p0, self._p1, scores,
            )  # fmt: skip
            if updates == BAD_INPUT:
                return self._score_and_learn_general(X, y, task)
            if updates < 0:
                row = -1 - updates
                self._count_learned(scores, y, lambda i: X.data[X.indptr[i] : X.indptr[i + 1]], row)
                self._reject(X[row])
            if updates:
                self._count(updates)
            return scores
        return self._score_and_learn_general(X, y, task)

    def _score_and_learn_general(self, X: Any, y: Any, task: Any) -> np.ndarray:
        """:meth:`score_and_learn_many` with the general validation of any input."""
        if not (isinstance(X, np.ndarray) and self._x_shape is not None and X.size >= self._S.size):
            return super().score_and_learn_many(X, y, task)
        batch, labels, tasks = self._prepare_batch(X, y, task, check_finite=False)
        saved, counted = self._S.copy(), getattr(self, self.update_counter)
        try:
            return self._score_and_learn_batch(batch, labels, tasks)
        except ValueError:
            self._S[...] = saved
            setattr(self, self.update_counter, counted)
            raise

    def _lean_batch(self, X: Any, y: Any, tasks: Any) -> bool:
        """Whether a batch has exactly the array types the kernel is compiled for: a
        writable C-contiguous float64 ``X`` (or float32 where :attr:`float32_rows`: read
        exactly, without a float64 copy, and writable or not) of the right width,
        C-contiguous writable float64 labels and int64 task indices, one per row. Values
        are checked by the kernel."""
        if not (
            type(X) is np.ndarray
            and type(y) is np.ndarray
            and type(tasks) is np.ndarray
            and y.dtype is _F64
            and tasks.dtype is _I64
            and (X.dtype is _F64 or (X.dtype is _F32 and self.float32_rows))
            and X.ndim == 2
            and X.shape[1] == self._n_features
            and y.shape == tasks.shape == (X.shape[0],)
        ):
            return False
        fx, fy, ft = X.flags, y.flags, tasks.flags
        return (
            fx.c_contiguous
            and (fx.writeable or X.dtype is _F32)
            and fy.c_contiguous
            and fy.writeable
            and ft.c_contiguous
            and ft.writeable
        )

    def _lean_csr(self, X: Any, y: Any, tasks: Any) -> bool:
        """Whether a batch is a CSR matrix of the array types the CSR kernel is compiled
        for (float64 values, int32 or int64 indices, all C-contiguous and writable) with
        float64 labels and int64 task indices as for :meth:`_lean_batch`. Values,
        ordering and shapes are checked by the kernel."""
        if not (
            type(X) is sp.csr_matrix
            and type(y) is np.ndarray
            and type(tasks) is np.ndarray
            and y.dtype is _F64
            and tasks.dtype is _I64
            and y.ndim == 1
            and tasks.ndim == 1
            and X.shape[1] == self._n_features
        ):
            return False
        indptr, indices, data = X.indptr, X.indices, X.data
        index = indices.dtype
        if not (
            (index is _I32 or index is _I64)
            and indptr.dtype is index
            and data.dtype is _F64
            and indptr.ndim == indices.ndim == data.ndim == 1
        ):
            return False
        return all(
            a.flags.c_contiguous and a.flags.writeable for a in (indptr, indices, data, y, tasks)
        )

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        labels, rows, scores = batch_rows(y, tasks)
        args = (self.kernel_kind, self._S, self._A)
        if batch.dense is not None:
            X = kernel_array(batch.dense, np.float64)
            updates = learn_dense(*args, X, labels, rows, self._p0, self._p1, scores)
        else:
            indptr, indices, data = csr_arrays(batch)
            updates = learn_csr(
                *args, indptr, indices, data, labels, rows, self._p0, self._p1, scores
            )
        if updates < 0:
            row = -1 - int(updates)
            if batch.dense is not None:
                self._count_learned(scores, labels, batch.dense.__getitem__, row)
                self._reject(batch.dense[row])
            vecs = batch.rows()
            self._count_learned(scores, labels, lambda i: vecs[i].val, row)
            self._reject(vecs[row])
        if updates:
            self._count(int(updates))
        return scores

    # ------------------------------------------------------------ lean public calls
    def _reject(self, x: Any) -> NoReturn:
        """Raise for the input whose score came out non-finite."""
        as_vector(x, self._n_features)  # raises ValueError on NaN or infinite values
        raise ValueError("the score is not finite: the weights or x overflow")

    def _lane_copy(self, x: Any, task: Any) -> np.ndarray | None:
        """For an ``(x, task)`` that :func:`_lean` refused: the float64 copy of ``x`` the
        fast lane takes (:func:`_lean_copy`), or None when it needs the general
        validation."""
        if type(task) is not int or not 0 <= task < self._n_tasks:
            return None
        return _lean_copy(x, self._x_shape)

    def decision_one(self, x: Any, task: int) -> float:
        if type(task) is np.int64:
            task = int(task)
        if not _lean(x, self._x_shape, task, self._n_tasks):
            row = self._lane_copy(x, task)
            if row is None:
                return super().decision_one(x, task)
            x = row
        score: float = self._decide(self.kernel_kind, self._S, x, task, self._p0, self._p1)
        if -_INF < score < _INF:
            return score
        self._reject(x)
        return score

    def predict_one(self, x: Any, task: int) -> int:
        # decision_one's lean lane, inlined: one Python call less per prediction
        if type(task) is np.int64:
            task = int(task)
        if not _lean(x, self._x_shape, task, self._n_tasks):
            row = self._lane_copy(x, task)
            if row is None:
                return 1 if super().decision_one(x, task) >= 0.0 else -1
            x = row
        score = self._decide(self.kernel_kind, self._S, x, task, self._p0, self._p1)
        if not -_INF < score < _INF:
            self._reject(x)
        return 1 if score >= 0.0 else -1

    def score_and_learn_one(self, x: Any, y: float, task: int) -> float:
        if type(task) is np.int64:  # what a loop over numpy arrays hands over
            task = int(task)
        if type(y) is np.float64:
            y = float(y)
        lane = (y == 1.0 or y == -1.0) and (type(y) is float or type(y) is int)
        if not (lane and _lean(x, self._x_shape, task, self._n_tasks)):
            row = self._lane_copy(x, task) if lane else None
            if row is None:
                t = check_task(task, self._n_tasks)
                return self._run(self._prepare(x), check_label(y, self.label_kind), t, True)
            x = row
        return self._lean_step(x, y, task)

    def _lean_step(self, x: np.ndarray, y: float, task: int) -> float:
        """The per-event lane's test-then-train step on a lean row (C-contiguous float64
        of the learner's width), a ``+-1`` label and a task index in range: the kernel
        step, the refusal of a non-finite score (nothing changed) and the update count."""
        score: float = self._learn_dense(
            self.kernel_kind, self._S, self._A, x, y, task, self._p0, self._p1
        )
        if not -_INF < score < _INF:
            self._reject(x)
        if self._mistake_driven:
            if (score >= 0.0) != (y > 0.0):
                self._count(1)
        elif self._updated(score, y, x):
            self._count(1)
        return score

    def learn_one(self, x: Any, y: float, task: int) -> None:
        self.score_and_learn_one(x, y, task)
