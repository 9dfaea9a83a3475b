"""The registered adaptive learners: three members and the ``adaptive`` selector.

* ``adaptive-logistic`` / ``adaptive-hinge``: shared + per-task weights, AdaGrad
  per-coordinate rates with VW's scale normalisation and the
  importance-invariant step on the logistic / hinge loss (docs/algorithms.md
  Sec. 11.1-11.2);
* ``adaptive-arow``: the same representation with a diagonal AROW update
  (Sec. 11.3);
* ``adaptive``: online model selection over a grid of those configurations run
  side by side in one pass; it predicts with the configuration with the fewest
  progressive-validation mistakes so far (Sec. 11.4).

All four share :class:`AdaptiveLearner`: a member is the selector with a grid of
one configuration.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from learners.active.kernels import (
    KernelPass,
    KernelRows,
    kernel_rows,
    rows_between,
    vector_rows,
)
from learners.adaptive.configs import Configs, loss_list, non_negative_list, positive_list
from learners.adaptive.event_kernels import adaptive_event, adaptive_sparse_event
from learners.adaptive.kernels import (
    ConfigArrays,
    OutlierArrays,
    StateArrays,
    adaptive_pass,
    adaptive_scores,
)
from learners.adaptive.layout import (
    config_pair,
    in_layout,
    interleave_for,
    kept_pair,
)
from learners.adaptive.pruning import PRUNE, PRUNE_EVERY, cuts, losing, survivors
from learners.adaptive.reference import AdaptiveState, learn, member_scores
from learners.base import APPEND_BIAS, L2_NORMALIZE, LOG_SCALE, Learner, Param
from learners.inputs import Batch, Vec, as_vector, check_label, check_task, log_scaled_row
from learners.kernels import kernel_array
from learners.memory_order import memory_order_param
from learners.params import non_negative, optional, positive
from learners.registry import register
from learners.rom.base import OUTLIER_PARAMS, flagged_outliers

__all__ = [
    "AdaptiveArow",
    "AdaptiveHinge",
    "AdaptiveLearner",
    "AdaptiveLogistic",
    "AdaptiveSelector",
    "one_event",
]

#: The state fields laid out in a memory order (:mod:`learners.adaptive.layout`).
_LAID_OUT = frozenset({"U0_", "G0_", "U_", "G_"})

#: The empty draw and query arrays of a pass that neither draws nor queries (never written).
_NO_DRAWS = np.zeros(0)
_NO_QUERIES = np.zeros(0, dtype=np.bool_)


def one_event(X: Any, y: Any, task: Any) -> tuple[Any, int, float] | None:
    """``(x, task, label)`` of a batch of one row (a dense or scipy sparse row, or a list of
    one :class:`~learners.inputs.Vec`) with a float64 label array and an int64 task array,
    each of shape (1,) (how the service's worker hands over an event it learns alone), for
    the event lanes; None for any other batch."""
    if type(X) is np.ndarray:
        if not (X.ndim == 2 and X.shape[0] == 1):
            return None
        x = X[0]
    elif sp.issparse(X) and X.ndim == 2 and X.shape[0] == 1:
        x = X
    elif type(X) is list and len(X) == 1 and isinstance(X[0], Vec):
        x = X[0]
    else:
        return None
    if not (type(y) is np.ndarray and y.shape == (1,) and y.dtype == np.float64):
        return None
    if not (type(task) is np.ndarray and task.shape == (1,) and task.dtype == np.int64):
        return None
    return x, int(task[0]), float(y[0])


CAVALLANTI2010 = (
    "Cavallanti, Cesa-Bianchi, Gentile. Linear Algorithms for Online Multitask Classification. "
    "JMLR 11, 2010 (shared + per-task b-family)"
)
ADAPTIVE_PAPERS = (
    f"{CAVALLANTI2010}; Duchi, Hazan, Singer 2011 (AdaGrad); Ross, Mineiro, Langford 2013 "
    "(normalized updates); Karampatziakis, Langford 2011 (importance-invariant updates)"
)
AROW_PAPER = (
    f"{CAVALLANTI2010}; Crammer, Kulesza, Dredze. Adaptive Regularization of Weight Vectors. "
    "NIPS 2009 (diagonal AROW)"
)

BIAS_ON = Param(APPEND_BIAS.name, True, APPEND_BIAS.description, APPEND_BIAS.check)
ETA = Param(
    "eta",
    2.0,
    "Step size of the shared part: rate_j = eta / (s_j sqrt(G_j)) (docs/algorithms.md Sec. 11.2).",
    positive,
)
COUPLING = Param(
    "b",
    1.0,
    "Coupling: the per-task part steps b times as far as the shared part (AROW: starts with b "
    "times its variance). 0 = one pooled model; large b = nearly independent tasks "
    "(the b-family of cavallanti2010, docs/algorithms.md Sec. 11.1).",
    non_negative,
)
OUTLIER_GAMMA = Param(
    "outlier_gamma",
    0.0,
    "zhang2018's group-lasso weight gamma of a per-task outlier part q_k (0: none): after each "
    "step q_k <- max(0, 1 - eta gamma / ||q_k||) q_k (docs/algorithms.md Sec. 11.7).",
    non_negative,
)
MEMORY_ORDER = memory_order_param(
    "How the weights and accumulators lie in memory: 'rows' (each configuration's weights "
    "contiguous: dense rows vectorise), 'features' (each feature's values of every "
    "configuration side by side: sparse rows read a few cache lines instead of many)",
    "The decisions are the same either way; a member's numbers bit for bit, a grid's "
    "(which runs in lanes by feature) to rounding (docs/algorithms.md Sec. 11.4).",
)
RIDGE = Param(
    "r",
    1.0,
    "AROW's regulariser r: beta = 1 / (x^T Sigma x + r) (docs/algorithms.md Sec. 11.3).",
    positive,
)


class AdaptiveLearner(Learner):
    """Shared + per-task linear models over a grid of configurations (docs/algorithms.md Sec. 11).

    Score of configuration m for task k: ``p_m = <u_0^m + u_k^m, x>``; the
    learner's score is that of the leader, the configuration with the fewest
    progressive mistakes so far (the first on ties; a member has one
    configuration). Every public call runs the compiled pass
    (:mod:`learners.adaptive.kernels`), a single event as a batch of one row, so that
    an event changes the state the same way alone or in a batch. The numpy reference
    (:mod:`learners.adaptive.reference`), which it equals to 1e-12, runs in
    :attr:`reference_class`.

    Attributes
    ----------
    U0_ : ndarray, shape (M, D)
        Shared weights per configuration.
    U_ : ndarray, shape (M, K, D)
        Per-task weights per configuration.
    G0_, G_ : ndarray, shapes (M, D) and (M, K, D)
        AdaGrad accumulators (AROW: diagonal variances).
    S_ : ndarray, shape (D,)
        Largest ``|x_j|`` seen per feature.
    stats_ : ndarray, shape (2,)
        ``[N, t]``: the sum of squared normalised inputs and the events learned.
    mistakes_ : ndarray of int64, shape (M,)
        Progressive-validation mistakes per configuration.
    duels_ : ndarray of int64, shape (M, 2)
        Per configuration, the events it got wrong where the leader was right, and those it
        got right where the leader was wrong (docs/algorithms.md Sec. 11.9).
    """

    kind = "classification"
    #: A NaN or infinite value of a row makes its score NaN or infinite (checked by
    #: :func:`learners.checks.common.check_bad_values_of_a_large_batch`).
    scores_show_bad_values: ClassVar[bool] = True
    #: A single event is the compiled pass on a batch of one row.
    per_event_equals_batch: ClassVar[bool] = True
    #: True in a :attr:`reference_class`: every per-event call runs the numpy reference.
    numpy_reference: ClassVar[bool] = False
    state_fields: ClassVar[tuple[str, ...]] = (
        "U0_",
        "U_",
        "G0_",
        "G_",
        "S_",
        "stats_",
        "mistakes_",
        "duels_",
    )

    @classmethod
    def configs_for(cls, hyper: dict[str, Any]) -> Configs:
        """The configurations a learner with the resolved hyperparameters ``hyper`` runs."""
        raise NotImplementedError

    def configs(self) -> Configs:
        """The configurations this learner runs."""
        return self.configs_for(self.hyper)

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """``U0_``, ``G0_`` (M x D), ``U_``, ``G_`` (M x K x D), ``S_`` (D), ``stats_`` and
        ``mistakes_``, ``duels_`` for the M configurations, with ``D = d + 1``."""
        m = cls.configs_for(cls._resolve_params(params)).size
        d, k = int(n_features) + 1, int(n_tasks)
        return 8 * (2 * m * d * (k + 1) + d + 2 + 3 * m)

    # ------------------------------------------------------------ public extras
    def leader(self) -> int:
        """Index of the configuration the learner predicts with now."""
        if self.mistakes_.shape[0] == 1:  # a member: its one configuration
            return 0
        return int(self.mistakes_.argmin())  # the method: a fifth of np.argmin's time

    def configuration_names(self) -> list[str]:
        """Readable names of the configurations, in order."""
        c = self.configs()
        return [c.describe(m) for m in range(c.size)]

    # ------------------------------------------------------------ learner hooks
    def _init_state(self) -> None:
        self._configs = self.configs()
        M, K, D = self._configs.size, self.n_tasks, self.dim
        shared, per_task = self._configs.initial_variances()
        interleave = interleave_for(D, self.hyper["memory_order"])
        zeros = np.zeros(M)
        self.U0_, self.G0_ = config_pair((M, D), zeros, shared, interleave)
        self.U_, self.G_ = config_pair((M, K, D), zeros, per_task, interleave)
        self.S_ = np.zeros(D)
        self.stats_ = np.zeros(2)
        self.mistakes_ = np.zeros(M, dtype=np.int64)
        self.duels_ = np.zeros((M, 2), dtype=np.int64)
        k_q, d_q = (K, D) if self._configs.has_outliers else (0, 0)
        self.Q_ = np.zeros((M, k_q, d_q))
        self.Qs_ = np.ones((M, k_q))
        self.Qn_ = np.zeros((M, k_q))

    @property
    def interleaved(self) -> bool:
        """Whether the weights and accumulators are laid out by feature
        (:mod:`learners.adaptive.layout`, docs/algorithms.md Sec. 11.4)."""
        return interleave_for(self.dim, self.hyper["memory_order"])

    def _lay_out(self) -> None:
        """Put ``U0_``/``G0_`` and ``U_``/``G_`` in the memory order the width calls for
        (:func:`learners.adaptive.layout.interleave_for`); logical shapes and values stay."""
        interleave = self.interleaved
        self.U0_, self.G0_ = in_layout(self.U0_, self.G0_, interleave)
        self.U_, self.G_ = in_layout(self.U_, self.G_, interleave)

    def _in_place_fields(self) -> Collection[str]:
        """The weights and accumulators are restored into the arrays :meth:`_init_state`
        allocated, already in their memory order: a copy and then its reordering by
        :meth:`_lay_out` held a wide model's state up to three times."""
        return _LAID_OUT

    def _set_state(self, state: Mapping[str, Any]) -> None:
        if "duels_" not in state:  # a state saved before the duels were counted
            state = {**state, "duels_": np.zeros((len(state["mistakes_"]), 2), dtype=np.int64)}
        super()._set_state(state)
        self._lay_out()

    def _state(self) -> AdaptiveState:
        return AdaptiveState(
            self.U0_,
            self.U_,
            self.G0_,
            self.G_,
            self.S_,
            self.stats_,
            self.mistakes_,
            self.duels_,
            self.Q_,
            self.Qs_,
            self.Qn_,
        )

    # The hooks on a preprocessed row (the wrappers' and the views' per-event rounds):
    # the compiled passes on a one-row batch, or the numpy reference in a reference_class.
    # A dense row takes the event lane (event_lane), with the numbers of the one-row pass.
    def _decision(self, x: Vec, task: int) -> float:
        if self.numpy_reference:
            return float(member_scores(self._state(), x, task)[self.leader()])
        if x.idx is None:
            score = self.event_lane(x.val, task, None, False, False, False)
            if score is not None:
                return score
        return self._event_pass(vector_rows(x, False, False), None, task)

    def _learn(self, x: Vec, y: float, task: int) -> None:
        self._score_and_learn_row(x, y, task)

    def _score_and_learn_row(self, x: Vec, y: float, task: int) -> float:
        """:meth:`_decision` then :meth:`_learn` on a preprocessed row, scoring it once."""
        if self.numpy_reference:
            lead = self.leader()
            return float(learn(self._state(), self._configs, x, y, task)[lead])
        if x.idx is None:
            score = self.event_lane(x.val, task, y, False, False, False)
            if score is not None:
                return score
        return self._event_pass(vector_rows(x, False, False), y, task)

    # ------------------------------------------------------------ per-event calls
    def decision_one(self, x: Any, task: int) -> float:
        """Signed score of ``x`` for ``task`` (the leader's); never mutates the learner.

        The compiled score of a one-row batch: the score :meth:`score_and_learn_one` would
        return now, bit for bit. A dense or sparse row takes the event lane
        (:meth:`event_lane`)."""
        score = self.event_lane(x, task, None, self._bias, self._normalize, self._log_scale)
        if score is not None:
            return score
        t = check_task(task, self._n_tasks)
        return float(self._event_pass(self._event_rows(x), None, t))

    def learn_one(self, x: Any, y: float, task: int) -> None:
        """Learn from one labelled example (the compiled pass on a one-row batch)."""
        self.score_and_learn_one(x, y, task)

    def score_and_learn_one(self, x: Any, y: float, task: int) -> float:
        """Test-then-train on one example: the compiled pass on a one-row batch, the
        numbers of :meth:`score_and_learn_many` for the same row (through the event lane,
        :meth:`event_lane`, where the row allows it)."""
        if type(y) is float or type(y) is int or type(y) is np.float64:
            score = self.event_lane(x, task, y, self._bias, self._normalize, self._log_scale)
            if score is not None:
                return score
        t = check_task(task, self._n_tasks)
        label = check_label(y, self.label_kind)
        return float(self._event_pass(self._event_rows(x), label, t))

    def event_lane(
        self,
        x: Any,
        task: Any,
        label: Any,
        bias: bool,
        normalize: bool,
        log_scale: bool,
        *,
        as_batch: bool = False,
    ) -> float | None:
        """The leader's score of the event ``(x, task)``, and with a ``label`` (-1 or +1) the
        event learned, in one compiled call (docs/algorithms.md Sec. 11.5):
        :func:`~learners.adaptive.event_kernels.adaptive_event` for a dense float64 or
        float32 row as wide as the state less the bias the kernel appends (on a float64
        copy when it is float32, read-only or strided),
        :func:`~learners.adaptive.event_kernels.adaptive_sparse_event` for a scipy sparse
        row or a :class:`~learners.inputs.Vec` whose canonical vector
        (:func:`~learners.inputs.as_vector`) is sparse. ``bias``, ``normalize`` and
        ``log_scale``: the preprocessing to apply (the learner's own, or that of a view of
        ``adaptive-auto``). The numbers of the compiled pass on a one-row batch, bit for
        bit, 2-4 times faster.

        None, having changed nothing, for a task or label out of range, any other input, a
        row that does not validate, and the rows the kernel refuses (not finite; a dense
        row with a zero entry and ``normalize``, unless ``as_batch``): those take the
        general path and its error messages. ``as_batch``: the numbers of the row as the
        one row of a batch (:meth:`score_and_learn_many`), which differ from the per-event
        calls' in the last bits for a dense row with a zero entry and ``normalize``."""
        if self.numpy_reference:
            return None
        if type(task) is np.int64:
            task = int(task)
        if type(task) is not int or not 0 <= task < self._n_tasks:
            return None
        if label is not None and not (label == 1.0 or label == -1.0):
            return None
        width = self.U0_.shape[1] - (1 if bias else 0)  # what the kernel appends the bias to
        if type(x) is not np.ndarray:
            if not (isinstance(x, Vec) or sp.issparse(x)):
                return None
            try:
                v = as_vector(x, width)
            except ValueError:  # the general path gives the error, in its own words
                return None
            if v.idx is not None:
                return self._sparse_lane(v, task, label, bias, normalize, log_scale)
            x = v.val
        if x.shape != (width,):
            return None
        if log_scale:
            if x.dtype != np.float64 and x.dtype != np.float32:
                return None
            x = log_scaled_row(x)
        elif not (x.dtype == np.float64 and x.flags.carray):
            if x.dtype != np.float32 and x.dtype != np.float64:
                return None
            x = np.array(x, dtype=np.float64)
        return self._run_lane(adaptive_event, (x,), bias, normalize, task, label, (as_batch,))

    def _sparse_lane(
        self,
        v: Vec,
        task: int,
        label: float | None,
        bias: bool,
        normalize: bool,
        log_scale: bool,
    ) -> float | None:
        """:meth:`event_lane` of a canonical sparse row (its non-zero values and their
        indices), log-scaled when asked."""
        assert v.idx is not None
        idx = v.idx if v.idx.dtype == np.int64 and v.idx.flags.carray else np.array(v.idx, np.int64)
        if log_scale:
            val = log_scaled_row(v.val)
        elif v.val.dtype == np.float64 and v.val.flags.carray:
            val = v.val
        else:
            val = np.array(v.val, dtype=np.float64)
        return self._run_lane(adaptive_sparse_event, (idx, val), bias, normalize, task, label, ())

    def _run_lane(
        self,
        kernel: Any,
        row: tuple[np.ndarray, ...],
        bias: bool,
        normalize: bool,
        task: int,
        label: float | None,
        options: tuple[bool, ...],
    ) -> float | None:
        """Call a lane's ``kernel`` on ``row`` (and its ``options``) with the learner's
        arrays; its score, or None where it refused the row (having changed nothing). A
        learned event is counted."""
        learn = label is not None
        configs, state, outlier = self.kernel_arrays()
        y = 1.0 if label is None else float(label)
        score = float(
            kernel(*row, bias, normalize, task, y, learn, *options, configs, state, outlier)
        )
        if score != score:
            return None
        if learn:
            self._learned_events(1)
        return score

    def _learned_events(self, n: int) -> None:
        """What a learning pass over ``n`` events counts besides the state (the selector's
        pruning clock)."""

    def _event_rows(self, x: Any) -> KernelRows:
        """``x`` validated and canonical, log-scaled when asked, as a one-row batch whose
        bias and unit-length scaling the kernel applies (as for a batch)."""
        v = as_vector(x, self._n_features)
        if self._log_scale:
            v = v.log_scaled()
        return vector_rows(v, self._bias, self._normalize)

    def _event_pass(self, rows: KernelRows, label: float | None, task: int) -> float:
        """The leader's score of the one row; with a ``label``, the row is then learned."""
        y = np.array([1.0 if label is None else label])
        tasks = np.array([task], dtype=np.int64)
        return float(self._run(rows, y, tasks, learn=label is not None, own_arrays=True)[0])

    def score_and_learn_many(self, X: Any, y: Any, task: Any) -> np.ndarray:
        """Test-then-train over a batch (see :meth:`learners.base.Learner.score_and_learn_many`).

        The compiled pass also does the input preprocessing (``append_bias``,
        ``l2_normalize``), row by row as it reads them, instead of a pass over the whole
        batch first. A batch of one row (how the service's worker learns an event alone)
        takes the event lane (:meth:`event_lane`).
        """
        row = one_event(X, y, task)
        if row is not None:
            score = self.event_lane(
                *row, self._bias, self._normalize, self._log_scale, as_batch=True
            )
            if score is not None:
                return np.array([score])
        return self._batch_pass(X, y, task, self._raw_batch, raw=True)

    def _raw_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        """:meth:`_kernel_batch` of a batch that is not preprocessed yet."""
        return self._kernel_batch(batch, y, tasks, self._bias, self._normalize)

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        return self._kernel_batch(batch, y, tasks, False, False)

    def _kernel_batch(
        self,
        batch: Batch,
        y: np.ndarray,
        tasks: np.ndarray,
        bias: bool,
        normalize: bool,
        *,
        own_arrays: bool = False,
    ) -> np.ndarray:
        """The compiled pass over ``batch``; ``bias`` / ``normalize``: the kernel appends
        the constant 1 / scales each row to unit length as it reads it (docs/algorithms.md
        Sec. 0), for a batch that is not preprocessed yet; ``own_arrays`` as for
        :meth:`_run`."""
        rows = kernel_rows(batch, bias, normalize)
        return self._run(rows, y, tasks, learn=True, own_arrays=own_arrays)

    def _kernel_scores(
        self, batch: Batch, tasks: np.ndarray, bias: bool, normalize: bool
    ) -> np.ndarray:
        """The leader's score of each row of ``batch`` for its task, without learning
        (:func:`learners.adaptive.kernels.adaptive_scores`; ``bias`` / ``normalize`` as for
        :meth:`_kernel_batch`; ``tasks`` a fresh int64 array, as the kernel takes it): what
        :meth:`_kernel_batch` would return for a row now."""
        rows = kernel_rows(batch, bias, normalize)
        return self._run(rows, np.ones(batch.n), tasks, learn=False, own_arrays=True)

    def _run(
        self,
        rows: KernelRows,
        y: np.ndarray,
        tasks: np.ndarray,
        learn: bool,
        *,
        own_arrays: bool = False,
    ) -> np.ndarray:
        """:func:`learners.adaptive.kernels.adaptive_pass` over ``rows`` (``learn``), or
        :func:`learners.adaptive.kernels.adaptive_scores` (the scores only, ``y`` unused);
        returns the leader's score of each row. ``own_arrays``: ``y`` and ``tasks`` were
        made by the caller as the kernel takes them (fresh float64 / int64 arrays), so
        they are not checked again (2 us of a per-event call)."""
        scores = np.empty(tasks.shape[0])
        if not own_arrays:
            y = kernel_array(y, np.float64)
            tasks = kernel_array(tasks, np.int64)
        call = KernelPass(*rows, y, tasks, False, _NO_DRAWS, 0, scores, _NO_QUERIES)
        configs, state, outlier = self.kernel_arrays()
        if learn:
            adaptive_pass(call, configs, state, outlier)
        else:
            adaptive_scores(call, state, outlier)
        return scores

    def kernel_arrays(self) -> tuple[ConfigArrays, StateArrays, OutlierArrays]:
        """The configurations, state and outlier parts as the compiled passes take them
        (:mod:`learners.adaptive.kernels`), which update the state in place."""
        c = self._configs
        return (
            (c.losses, c.etas, c.couplings, c.ridges),
            (
                self.U0_,
                self.U_,
                self.G0_,
                self.G_,
                self.S_,
                self.stats_,
                self.mistakes_,
                self.duels_,
            ),
            (c.outlier_gammas, self.Q_, self.Qs_, self.Qn_),
        )

    def _add_task(self) -> None:
        """A new task: zero weights, fresh accumulators, in the arrays' memory order (the
        new pair is allocated in that order and the old tasks copied in once)."""
        _, per_task = self._configs.initial_variances()
        M, K, D = self.U_.shape
        U, G = config_pair((M, K + 1, D), np.zeros(M), per_task, self.interleaved)
        U[:, :K] = self.U_
        G[:, :K] = self.G_
        self.U_, self.G_ = U, G
        if self.Q_.shape[1]:
            self.Q_ = np.concatenate([self.Q_, np.zeros((M, 1, D))], axis=1)
            self.Qs_ = np.concatenate([self.Qs_, np.ones((M, 1))], axis=1)
            self.Qn_ = np.concatenate([self.Qn_, np.zeros((M, 1))], axis=1)

    def _task_weights(self) -> np.ndarray | None:
        m = self.leader()
        W = self.U0_[m][None, :] + self.U_[m]
        if self.Q_.shape[1]:
            W = W + self.Qs_[m][:, None] * self.Q_[m]
        return W


@register
class AdaptiveLogistic(AdaptiveLearner):
    """Shared + per-task logistic regression, adaptive normalised invariant steps (Sec. 11.2).

    With ``outlier_gamma > 0`` each task also has zhang2018's outlier part ``q_k``
    (score ``<u_0 + u_k + q_k, x>``), stepped like ``u_k`` and shrunk by group
    soft-thresholding (docs/algorithms.md Sec. 11.7); ``outlier_scores()`` is
    ``||q_k||`` and ``outlier_tasks()`` applies ``outlier_rule``.
    """

    name = "adaptive-logistic"
    summary = "Shared + per-task logistic model, AdaGrad normalised importance-invariant steps"
    paper = ADAPTIVE_PAPERS
    params: ClassVar[tuple[Param, ...]] = (
        ETA,
        COUPLING,
        OUTLIER_GAMMA,
        *OUTLIER_PARAMS,
        MEMORY_ORDER,
        BIAS_ON,
        L2_NORMALIZE,
        LOG_SCALE,
    )
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"b": 0.5, "eta": 3.0, "append_bias": False, "l2_normalize": True},
        {"outlier_gamma": 0.05, "b": 0.5},
        {"outlier_gamma": 0.2, "b": 0.0, "outlier_rule": "absolute", "l2_normalize": True},
        {"memory_order": "features", "b": 0.5},
    )
    state_fields: ClassVar[tuple[str, ...]] = (
        *AdaptiveLearner.state_fields,
        "Q_",
        "Qs_",
        "Qn_",
    )
    reports_outliers: ClassVar[bool] = True
    loss: ClassVar[str] = "logistic"

    @classmethod
    def configs_for(cls, hyper: dict[str, Any]) -> Configs:
        return Configs.single(cls.loss, hyper["eta"], hyper["b"], 1.0, hyper["outlier_gamma"])

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """The member's arrays plus, with an outlier part, ``Q_`` (K x D), ``Qs_`` and ``Qn_``."""
        base = super().state_bytes(n_features, n_tasks, **params)
        if not cls._resolve_params(params)["outlier_gamma"] > 0.0:
            return base
        d, k = int(n_features) + 1, int(n_tasks)
        return base + 8 * (k * d + 2 * k)

    def outlier_scores(self) -> np.ndarray:
        """``||q_k||_2`` of every task (zeros without an outlier part), shape ``(K,)``."""
        if not self.Q_.shape[1]:
            return np.zeros(self.n_tasks)
        return np.sqrt(np.maximum(self.Qn_[self.leader()], 0.0))

    def outlier_tasks(self) -> list[int]:
        """Tasks flagged by ``outlier_rule`` (docs/algorithms.md Sec. 5.4 and Sec. 11.7)."""
        return flagged_outliers(self.outlier_scores(), self.hyper)


@register
class AdaptiveHinge(AdaptiveLogistic):
    """Shared + per-task linear SVM, adaptive normalised invariant steps (Sec. 11.2)."""

    name = "adaptive-hinge"
    summary = "Shared + per-task hinge-loss model, AdaGrad normalised importance-invariant steps"
    loss = "hinge"


@register
class AdaptiveArow(AdaptiveLearner):
    """Shared + per-task diagonal AROW (Sec. 11.3)."""

    name = "adaptive-arow"
    summary = "Shared + per-task diagonal AROW (second-order, confidence-weighted)"
    paper = AROW_PAPER
    params: ClassVar[tuple[Param, ...]] = (
        RIDGE,
        COUPLING,
        MEMORY_ORDER,
        BIAS_ON,
        L2_NORMALIZE,
        LOG_SCALE,
    )
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"b": 0.0, "r": 0.1, "l2_normalize": True},
    )

    @classmethod
    def configs_for(cls, hyper: dict[str, Any]) -> Configs:
        return Configs.single("arow", 1.0, hyper["b"], hyper["r"])


LOSSES = Param(
    "losses",
    "logistic,hinge,arow",
    "Comma-separated losses of the grid: logistic, hinge, arow (docs/algorithms.md Sec. 11.4).",
    loss_list,
)
ETAS = Param("etas", "0.3,1.0,3.0", "Comma-separated step sizes eta of the grid.", positive_list)
COUPLINGS = Param(
    "couplings",
    "0.5,2.0",
    "Comma-separated couplings b of the grid (0 = pooled).",
    non_negative_list,
)


AROW_COUPLINGS = Param(
    "arow_couplings",
    None,
    "Comma-separated couplings b of the grid's AROW configurations (None: the same as couplings).",
    optional(non_negative_list),
)


@register
class AdaptiveSelector(AdaptiveLearner):
    """Online model selection over adaptive configurations (docs/algorithms.md Sec. 11.4).

    Runs every (loss, eta, b) of the grid side by side in one pass and predicts
    with the one with the fewest progressive-validation mistakes so far. Every
    ``prune_every`` labelled events it drops the configurations that are significantly
    behind its own predictions (``prune``; :mod:`learners.adaptive.pruning`, Sec. 11.9):
    the state arrays then hold the surviving configurations only.

    Attributes
    ----------
    alive_ : ndarray of int64
        Grid indices of the configurations still run, in grid order.
    events_ : ndarray of int64, shape (1,)
        Labelled events learned (the pruning clock).
    """

    name = "adaptive"
    summary = "Online model selection: adaptive multitask configurations side by side, best so far"
    paper = ADAPTIVE_PAPERS
    params: ClassVar[tuple[Param, ...]] = (
        LOSSES,
        ETAS,
        COUPLINGS,
        AROW_COUPLINGS,
        RIDGE,
        PRUNE,
        PRUNE_EVERY,
        MEMORY_ORDER,
        BIAS_ON,
        L2_NORMALIZE,
        LOG_SCALE,
    )
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"prune_every": 7, "prune": 0.5, "etas": "0.1,1,10"},
        {"prune_every": 5, "prune": 0.0, "couplings": "0,4"},
        {"losses": "arow,logistic", "etas": "0.5", "couplings": "0,1", "append_bias": False},
        {"losses": "logistic,arow", "etas": "1.0", "couplings": "0.5", "arow_couplings": "0.25,4"},
        {"losses": "hinge,arow", "etas": "0.5,2", "couplings": "0,1", "memory_order": "features"},
        # ten configurations by feature: a group of eight lanes and a masked group of two
        {
            "losses": "logistic,hinge,arow",
            "etas": "0.5,2",
            "couplings": "0,2",
            "memory_order": "features",
        },
    )

    state_fields: ClassVar[tuple[str, ...]] = (
        *AdaptiveLearner.state_fields,
        "alive_",
        "events_",
    )

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """The whole grid's arrays (pruning only shrinks them), ``alive_`` and ``events_``."""
        m = cls.configs_for(cls._resolve_params(params)).size
        return super().state_bytes(n_features, n_tasks, **params) + 8 * (m + 1)

    @classmethod
    def configs_for(cls, hyper: dict[str, Any]) -> Configs:
        return Configs.grid(
            hyper["losses"].split(","),
            [float(e) for e in hyper["etas"].split(",")],
            [float(b) for b in hyper["couplings"].split(",")],
            hyper["r"],
            arow_couplings=None
            if hyper.get("arow_couplings") is None
            else [float(b) for b in hyper["arow_couplings"].split(",")],
        )

    # ------------------------------------------------------------ pruning (Sec. 11.9)
    def configs(self) -> Configs:
        """The configurations still run (the grid's, less those pruned)."""
        return self.configs_for(self.hyper).subset(self.alive_)

    def _init_state(self) -> None:
        self.alive_ = np.arange(self.configs_for(self.hyper).size, dtype=np.int64)
        self.events_ = np.zeros(1, dtype=np.int64)
        super()._init_state()

    def _set_state(self, state: Mapping[str, Any]) -> None:
        """Restore, first shrinking the arrays to the saved state's surviving configurations
        (a state saved before pruning existed has all of them)."""
        alive = survivors(state.get("alive_"), self.configs_for(self.hyper).size, "alive_")
        if not np.array_equal(alive, self.alive_):
            self.alive_ = alive.copy()
            AdaptiveLearner._init_state(self)
        events = state.get("events_", np.zeros(1, dtype=np.int64))
        super()._set_state({**state, "alive_": self.alive_, "events_": events})

    def _prunes(self) -> bool:
        """Whether a learning pass checks for losing configurations: pruning is on and more
        than one configuration is left."""
        return self.hyper["prune"] > 0.0 and self.alive_.shape[0] > 1

    def _run(
        self,
        rows: KernelRows,
        y: np.ndarray,
        tasks: np.ndarray,
        learn: bool,
        *,
        own_arrays: bool = False,
    ) -> np.ndarray:
        """:meth:`AdaptiveLearner._run`, a learning pass cut at the pruning checks (every
        ``prune_every`` labelled events counted from the first), each check run where it
        falls, so that a batch gives the result of its rows one at a time."""
        if not learn:
            return super()._run(rows, y, tasks, learn, own_arrays=own_arrays)
        if not self._prunes():
            scores = super()._run(rows, y, tasks, learn, own_arrays=own_arrays)
            self._learned(tasks.shape[0])
            return scores
        if not own_arrays:
            y = kernel_array(y, np.float64)
            tasks = kernel_array(tasks, np.int64)
        scores = np.empty(tasks.shape[0])
        every = self.hyper["prune_every"]
        for start, stop in cuts(tasks.shape[0], self.events_, every, self._prunes):
            part = rows_between(rows, start, stop)
            scores[start:stop] = super()._run(
                part, y[start:stop], tasks[start:stop], True, own_arrays=True
            )
            self._learned(stop - start)
        return scores

    def _learned_events(self, n: int) -> None:
        self._learned(n)

    def _score_and_learn_row(self, x: Vec, y: float, task: int) -> float:
        if not self.numpy_reference:  # the compiled pass: _run counts and checks
            return super()._score_and_learn_row(x, y, task)
        score = super()._score_and_learn_row(x, y, task)
        self._learned(1)
        return score

    def _learned(self, n: int) -> None:
        """Count ``n`` labelled events learned (with pruning on: the clock stays at 0 without,
        as in the passes of an active learner over this selector, which never prune); at a
        check, drop the losing configurations."""
        if not self.hyper["prune"] > 0.0:
            return
        self.events_[0] += n
        if self._prunes() and self.events_[0] % self.hyper["prune_every"] == 0:
            drop = losing(self.duels_, self.leader(), self.hyper["prune"])
            if drop.any():
                self._keep(~drop)

    def _keep(self, keep: np.ndarray) -> None:
        """Keep only the configurations ``keep`` (a mask), in order, in the arrays' memory
        order, packed into the memory the arrays already use
        (:func:`learners.adaptive.layout.kept_pair`)."""
        self.alive_ = self.alive_[keep]
        self._configs = self.configs()
        interleave = self.interleaved
        self.U0_, self.G0_ = kept_pair(self.U0_, self.G0_, keep, interleave)
        self.U_, self.G_ = kept_pair(self.U_, self.G_, keep, interleave)
        self.mistakes_ = self.mistakes_[keep]
        self.duels_ = self.duels_[keep]
        self.Q_, self.Qs_, self.Qn_ = self.Q_[keep], self.Qs_[keep], self.Qn_[keep]


class ReferencePerEvent(Learner):
    """The per-event calls of :class:`learners.base.Learner` over the numpy reference hooks
    (``_decision``, ``_learn``), in front of an adaptive learner or ``adaptive-auto``: the
    slow path the kernels are checked against (docs/algorithms.md Sec. 11.5;
    :attr:`learners.base.Learner.reference_class`)."""

    per_event_equals_batch: ClassVar[bool] = False
    numpy_reference: ClassVar[bool] = True

    def decision_one(self, x: Any, task: int) -> float:
        return Learner.decision_one(self, x, task)

    def learn_one(self, x: Any, y: float, task: int) -> None:
        Learner.learn_one(self, x, y, task)

    def score_and_learn_one(self, x: Any, y: float, task: int) -> float:
        return Learner.score_and_learn_one(self, x, y, task)


def with_reference(cls: type[Learner]) -> None:
    """Give ``cls`` its ``reference_class``: ``cls`` with :class:`ReferencePerEvent` in front."""
    cls.reference_class = type(
        f"{cls.__name__}Reference",
        (ReferencePerEvent, cls),
        {"__doc__": f"{cls.__name__} with the numpy reference per event (ReferencePerEvent)."},
    )


for _cls in (AdaptiveLogistic, AdaptiveHinge, AdaptiveArow, AdaptiveSelector):
    with_reference(_cls)
