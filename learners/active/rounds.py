"""Batches of active rounds: score, ask, learn when asked, row by row.

:class:`ActiveLearner` is the base of the active learners of :mod:`learners.amlc`
and :mod:`learners.active`. Besides the per-event contract of
:class:`~learners.base.Learner` it offers :meth:`ActiveLearner.query_and_learn_many`,
the batch form of the active protocol the evaluation runs (``decision_one``,
then ``query_one``, then ``learn_one`` with the row's label when the answer was
True), and it keeps the row-by-row numpy paths as the references the compiled
kernels are tested against (:meth:`ActiveLearner._score_and_learn_reference`,
:meth:`ActiveLearner._query_and_learn_reference`, built on the numpy hooks
``_decision``, ``_query`` and ``_learn``).

With a compiled pass and :attr:`ActiveLearner.per_event_kernel`, the per-event
calls ``decision_one``, ``predict_one``, ``learn_one`` and ``score_and_learn_one``
validate x once and run the kernel on a batch of one row (the preprocessing
included); ``query_one`` keeps the numpy ``_query`` (one or two draws from the
generator) unless the learner draws against the compiled score (AMLC's and PEER's
``query_one`` and ``decide_and_query``, docs/algorithms.md Sec. 3.5). A learner that
sets :attr:`ActiveLearner.kernel_decisions` off keeps its scores on the numpy
``_decision`` and learns through the kernel.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from learners.active.draws import Uniforms, draw_below
from learners.active.kernels import NO_BUDGET, KernelPass, kernel_rows, vector_rows
from learners.base import Learner
from learners.inputs import Batch, Vec, as_vector, check_label, check_task
from learners.kernels import kernel_array

__all__ = ["ActiveLearner"]

_NO_DRAWS = np.zeros(0)
#: Row types the compiled entries take as a float64 copy (:meth:`ActiveLearner._event_row`).
_ROW_TYPES = (np.dtype(np.float64), np.dtype(np.float32))


def _scores(rounds: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The rows' scores of active rounds' ``(scores, queried)``."""
    return rounds[0]


class ActiveLearner(Learner):
    """An active learner with a batch form of its query-then-learn rounds.

    A subclass with a compiled pass implements :meth:`_run_kernel` (and sets
    :attr:`draws_per_row`); both batch paths then go through it whenever
    :meth:`_compiled` says so, and through the numpy references otherwise.
    """

    #: A NaN or infinite value of a row makes its score NaN or infinite (checked by
    #: :func:`learners.checks.common.check_bad_values_of_a_large_batch`).
    scores_show_bad_values: ClassVar[bool] = True
    #: Most uniforms one active round draws (PEER: 2).
    draws_per_row: ClassVar[int] = 1
    #: Whether single events go through the kernel too: worth it when the numpy
    #: update costs more than a kernel call (AMLC, PEER: K margins and a tau row);
    #: a per-task Perceptron step is cheaper in numpy.
    per_event_kernel: ClassVar[bool] = False
    #: With :attr:`per_event_kernel`: whether ``decision_one`` (and the score that
    #: ``score_and_learn_one`` returns) comes from the kernel too, or from the numpy
    #: ``_decision`` (where that is cheaper than a kernel call and lets
    #: :meth:`~learners.base.Learner.decide_and_query` reuse the margins it reads).
    kernel_decisions: ClassVar[bool] = True
    #: With :attr:`per_event_kernel`: the compiled entry of single events, called as
    #: ``entry(row, as_batch, bias, normalize, task, label, learn, *_kernel_args())``
    #: (:meth:`_dense_event`; :mod:`learners.amlc.event_kernels`,
    #: :mod:`learners.active.adaptive_event_kernels`), or None.
    event_entry: ClassVar[Any] = None

    def query_and_learn_many(self, X: Any, y: Any, task: Any) -> tuple[np.ndarray, np.ndarray]:
        """Active rounds over a batch; returns each row's score and query decision.

        Row by row this equals ``decision_one`` (the score), ``query_one`` (the
        decision, drawn from the learner's generator and counted against the
        budget) and, when it answered True, ``learn_one`` with the row's label:
        the same scores, decisions, weights and generator state. Labels of rows
        that are not queried are never read. The batch is validated first, so a
        bad row changes nothing.
        """
        if not self._compiled():
            batch, labels, tasks = self._prepare_batch(X, y, task)
            return self._query_and_learn_reference(batch, labels, tasks)
        return self._batch_pass(X, y, task, self._active_pass, raw=True, scores=_scores)

    def score_and_learn_many(self, X: Any, y: Any, task: Any) -> np.ndarray:
        """Test-then-train over a batch (see :meth:`learners.base.Learner.score_and_learn_many`).

        With a compiled pass the kernel also does the input preprocessing, row by
        row as it reads them, instead of a pass over the whole batch first.
        """
        if not self._compiled():
            return super().score_and_learn_many(X, y, task)
        if type(X) is np.ndarray and X.ndim == 2 and X.shape[0] == 1 and self.per_event_kernel:
            score = self._one_row_batch(X, y, task)
            if score is not None:
                return np.array([score])
        return self._batch_pass(X, y, task, self._passive_pass, raw=True)

    def _active_pass(
        self, batch: Batch, labels: np.ndarray, tasks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The compiled active rounds over a batch that is not preprocessed yet."""
        return self._kernel_pass(batch, labels, tasks, active=True, preprocess=True)

    def _passive_pass(self, batch: Batch, labels: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        """The compiled test-then-train pass over a batch that is not preprocessed yet."""
        return self._kernel_pass(batch, labels, tasks, active=False, preprocess=True)[0]

    def _one_row_batch(self, X: np.ndarray, y: Any, task: Any) -> float | None:
        """A labelled batch of one dense row (how the worker hands over a single event)
        through the learner's compiled entry, with the numbers of the batch pass; None,
        having changed nothing, where the entry does not take it: no entry, ``log_scale``,
        a label, task or row that is not plainly valid (the batch path then validates
        and reports it). Unlike :meth:`_one_row`, a row with zero entries is taken: a
        dense batch holds it dense."""
        if not (
            type(y) is np.ndarray
            and y.shape == (1,)
            and y.dtype.kind == "f"
            and type(task) is np.ndarray
            and task.shape == (1,)
            and task.dtype.kind in "iu"
        ):
            return None
        label, t = float(y[0]), int(task[0])
        valid = (
            label in (1.0, -1.0) if self.label_kind == "classification" else math.isfinite(label)
        )
        row = self._event_row(X[0])
        if not (valid and 0 <= t < self._n_tasks) or row is None:
            return None
        return self._entry_score(row, label, t, True, True)

    # ------------------------------------------------------------ unlabelled batches
    def _decide_and_query_batch(
        self, X: Any, batch: Batch, tasks: np.ndarray, probability: bool
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """:meth:`~learners.base.Learner.decide_and_query_many` of a learner whose round on
        an unlabelled row is one draw against a probability of the row's score and changes
        nothing else (:meth:`_draws_against_scores`): every row scored by one compiled pass
        that learns nothing (:meth:`_unlabelled_scores`), the probabilities from the scores
        (:meth:`_score_probabilities`), then the trials in row order (:func:`draw_below`).
        Any other rule (PEER's second draw and its step on the peers' vote, OMTL's round
        count) takes the rows one by one."""
        if not (batch.n and self._scores_batches() and self._draws_against_scores()):
            return super()._decide_and_query_batch(X, batch, tasks, probability)
        scores = self._unlabelled_scores(batch, tasks)
        with np.errstate(invalid="ignore"):  # a NaN score gives a NaN probability: no query
            p = self._score_probabilities(scores)
        asked = draw_below(self.rng, p, self._remaining_queries())
        self.n_queries_ += int(np.count_nonzero(asked))
        return scores, (p if probability and self.reports_query_probability else None), asked

    def _scores_batches(self) -> bool:
        """Whether :meth:`_unlabelled_scores` can score a batch in one compiled call: where
        the learner's own pass runs (:meth:`_compiled`), unless a learner says otherwise."""
        return self._compiled()

    def _draws_against_scores(self) -> bool:
        """Whether :meth:`~learners.base.Learner.decide_and_query` on this instance is the
        score of ``decision_one`` and one draw against :meth:`_score_probabilities` of it,
        with no other change: no learner says so unless it overrides this."""
        return False

    def _score_probabilities(self, scores: np.ndarray) -> np.ndarray:
        """The query probability of each row from its score (with
        :meth:`_draws_against_scores`), element by element the arithmetic of the
        per-event rule."""
        raise NotImplementedError

    def _unlabelled_scores(self, batch: Batch, tasks: np.ndarray) -> np.ndarray:
        """Every row's score by the compiled pass as an active round with no query left
        (:meth:`_one_row` without ``learn``): nothing is drawn and nothing changes. ``batch``
        is raw: the pass appends the bias and scales to unit length as it reads a row."""
        batch = batch.preprocessed(False, False, self._log_scale)  # sorted CSR, log scale
        n = batch.n
        return self._kernel_pass(
            batch, np.zeros(n), tasks, active=True, preprocess=True, draws=False
        )[0]

    # ------------------------------------------------------------ per-event paths
    def _kernel_scores(self) -> bool:
        """Whether ``decision_one`` is the compiled pass on one row (:attr:`per_event_kernel`
        with :attr:`kernel_decisions`), not the numpy ``_decision``."""
        return self.per_event_kernel and self.kernel_decisions and self._compiled()

    def decision_one(self, x: Any, task: int) -> float:
        if not self._kernel_scores():
            return super().decision_one(x, task)
        return self._one_row(x, 0.0, check_task(task, self._n_tasks), learn=False)

    def learn_one(self, x: Any, y: float, task: int) -> None:
        if not (self.per_event_kernel and self._compiled()):
            super().learn_one(x, y, task)
            return
        t = check_task(task, self._n_tasks)
        self._one_row(x, check_label(y, self.label_kind), t, learn=True)

    def score_and_learn_one(self, x: Any, y: float, task: int) -> float:
        t = check_task(task, self._n_tasks)
        label = check_label(y, self.label_kind)
        if not (self.per_event_kernel and self._compiled()):
            v = self._prepare(x)
            score = float(self._decision(v, t))
            self._learn(v, label, t)
            return score
        if not self.kernel_decisions:
            v = as_vector(x, self._n_features)
            score = float(self._decision(self._prepare(v), t))
            self._one_row(x, label, t, learn=True, vector=v)
            return score
        return self._one_row(x, label, t, learn=True)

    def _one_row(
        self, x: Any, y: float, task: int, *, learn: bool, vector: Vec | None = None
    ) -> float:
        """Score ``x`` and, with ``learn``, learn it: the kernel on one row.

        Without ``learn`` the row runs as an active round with no query left in the
        budget: it is scored, nothing is drawn and nothing changes. A dense row goes to
        the learner's compiled entry (:meth:`_dense_event`) when it has one. ``vector``:
        ``x``'s canonical vector where the caller has it already.
        """
        if type(x) is np.ndarray and x.ndim == 1:
            row = self._event_row(x)
            if row is not None:
                score = self._entry_score(row, y, task, learn, False)
                if score is not None:
                    return score
        call = self._vector_call(x, y, task, learn, vector)
        self._run_kernel(call)
        return float(call.scores[0])

    def _vector_call(
        self, x: Any, y: float, task: int, learn: bool, vector: Vec | None = None
    ) -> KernelPass:
        """The pass on one row that :meth:`_one_row` runs where no entry takes ``x``: its
        canonical vector (validated here, log-scaled with ``log_scale``), with the bias
        and unit length left to the kernel."""
        v = as_vector(x, self._n_features) if vector is None else vector
        rows = vector_rows(v.log_scaled() if self._log_scale else v, self._bias, self._normalize)
        return KernelPass(
            *rows,
            np.array([y]),
            np.array([task], dtype=np.int64),
            not learn,
            _NO_DRAWS,
            0,
            np.empty(1),
            np.zeros(1, dtype=np.bool_),
        )

    def _event_row(self, x: np.ndarray) -> np.ndarray | None:
        """The 1-D ``x`` as the compiled entries take it: itself when a writeable C-ordered
        float64 row of the learner's dimension (the entries do not write to it), else a
        float64 copy of a float64 or float32 row (the worker's rows are read-only
        float32); None for any other row, and with ``log_scale``, which the general paths
        apply first."""
        if x.shape[0] != self._n_features or self._log_scale:
            return None
        if x.dtype == np.float64 and x.flags.c_contiguous and x.flags.writeable:
            return x
        return np.array(x, dtype=np.float64) if x.dtype in _ROW_TYPES else None

    def _dense_event(
        self, row: np.ndarray, y: float, task: int, learn: bool, as_batch: bool
    ) -> float | None:
        """:meth:`_one_row` of a dense float64 row through the learner's compiled entry
        (:attr:`event_entry`), which builds the call itself; None for a learner without
        one. An entry returns NaN, having changed nothing, for a row it does not take (an
        entry not finite, or, unless ``as_batch``, a zero entry: the canonical vector
        holds such a row sparse)."""
        entry = self.event_entry
        if entry is None:
            return None
        score: float = entry(
            row, as_batch, self._bias, self._normalize, task, y, learn, *self._kernel_args()
        )
        return score

    def _kernel_args(self) -> tuple[Any, ...]:
        """The arrays and parameters that :meth:`_run_kernel`'s pass and the
        :attr:`event_entry` take besides the call, in their order."""
        raise NotImplementedError

    def _entry_score(
        self, row: np.ndarray, y: float, task: int, learn: bool, as_batch: bool
    ) -> float | None:
        """:meth:`_dense_event`'s score, or None where the row did not go through an entry
        (nothing changed). An entry refuses a row with NaN, but a row it took may score
        NaN too (weights that overflowed): that NaN is the score, as the general path
        would give it, and the row is not learned again."""
        score = self._dense_event(row, y, task, learn, as_batch)
        if score is None or score == score:
            return score
        return score if self._entry_took(row, as_batch) else None

    @staticmethod
    def _entry_took(row: np.ndarray, as_batch: bool) -> bool:
        """Whether the compiled entries take ``row`` (and so a NaN they return is its
        score, not a refusal): every entry finite and, per event, non-zero."""
        return bool(np.isfinite(row).all()) and (as_batch or bool((row != 0.0).all()))

    # ------------------------------------------------------------ batch paths
    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        if not self._compiled():
            return self._score_and_learn_reference(batch, y, tasks)
        return self._kernel_pass(batch, y, tasks, active=False)[0]

    def _query_and_learn_batch(
        self, batch: Batch, y: np.ndarray, tasks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Active rounds over a validated batch."""
        if not self._compiled():
            return self._query_and_learn_reference(batch, y, tasks)
        return self._kernel_pass(batch, y, tasks, active=True)

    def _compiled(self) -> bool:
        """Whether this instance's batches run through :meth:`_run_kernel`."""
        return False

    def _run_kernel(self, call: KernelPass) -> tuple[int, int]:
        """Run the compiled pass over ``call``; returns (uniforms used, queries made)."""
        raise NotImplementedError

    def _kernel_pass(
        self,
        batch: Batch,
        y: np.ndarray,
        tasks: np.ndarray,
        *,
        active: bool,
        preprocess: bool = False,
        draws: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Drive :meth:`_run_kernel`: draws ahead, query counter, generator state.

        ``preprocess``: ``batch`` is raw and the kernel applies ``append_bias`` /
        ``l2_normalize`` as it reads each row. ``draws=False`` (with ``active``): rounds
        with no query left, which score the rows, draw nothing and change nothing.
        """
        n = batch.n
        scores = np.empty(n)
        queried = np.zeros(n, dtype=np.bool_)
        uniforms = self._uniforms(n, self.draws_per_row) if active and draws else None
        u = uniforms.values if uniforms is not None else np.zeros(0)
        drawn, asked = self._run_kernel(
            KernelPass(
                *kernel_rows(batch, preprocess and self._bias, preprocess and self._normalize),
                kernel_array(y, np.float64),
                kernel_array(tasks, np.int64),
                active,
                u,
                self._remaining_queries() if draws else 0,
                scores,
                queried,
            )
        )
        if uniforms is not None:
            uniforms.commit(drawn)
        self.n_queries_ += asked
        return scores, queried

    def _remaining_queries(self) -> int:
        """Queries left in the budget (:data:`~learners.active.kernels.NO_BUDGET` without one)."""
        if self._budget is None:
            return int(NO_BUDGET)
        return max(0, self._budget - self.n_queries_)

    def _uniforms(self, n: int, per_row: int) -> Uniforms:
        """Uniforms for an active pass of ``n`` rows with at most ``per_row`` draws each.

        The count is exact when every row draws exactly once: one draw per row and a
        budget that cannot run out within the batch.
        """
        exact = per_row == 1 and self._remaining_queries() >= n
        return Uniforms(self.rng, per_row * n, exact=exact)

    # ------------------------------------------------------------ references
    def _score_and_learn_reference(
        self, batch: Batch, y: np.ndarray, tasks: np.ndarray
    ) -> np.ndarray:
        """The row-by-row numpy test-then-train pass (the kernels' reference)."""
        return Learner._score_and_learn_batch(self, batch, y, tasks)

    def _query_and_learn_reference(
        self, batch: Batch, y: np.ndarray, tasks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The row-by-row numpy active pass: ``_decision``, budget and ``_query``, ``_learn``."""
        scores = np.empty(batch.n)
        queried = np.zeros(batch.n, dtype=bool)
        for i, (v, label, t) in enumerate(
            zip(batch.rows(), y.tolist(), tasks.tolist(), strict=True)
        ):
            scores[i] = self._decision(v, t)
            if self._budget is not None and self.n_queries_ >= self._budget:
                continue
            if self._query(v, t):
                self.n_queries_ += 1
                queried[i] = True
                self._learn(v, label, t)
        return scores, queried
