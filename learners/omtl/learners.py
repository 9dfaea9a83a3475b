"""Online task-relationship learners of saha2011: OMTLLOG, OMTLVON, OMTLCOV and BATCHOPT.

All four follow saha2011 Algorithm 1 (docs/algorithms.md Sec. 2.1):

* ``A`` starts at ``I/K`` (so ``A^{-1} = K I``: K independent Perceptrons whose
  steps are ``K y x``, sign-identical to ``ipl``);
* on a mistake of task ``i_t`` every task moves by ``y (A^{-1})_{j, i_t} x``
  (Eq. 3.3, the (j, i_t) entry of the matrix inverse, docs/algorithms.md Sec. 2.4);
* from round ``EPOCH`` on (the priming period, Sec. 3.2), every mistake is
  followed by an update of A: Eq. (3.7) LogDet, (3.8) von Neumann, (3.9)
  covariance or (3.10) batch optimum (:mod:`learners.omtl.updates`).

**When priming ends.** ``EPOCH`` is the 1-based round from which A is updated
(Algorithm 1, line 14: ``t >= EPOCH``). It is ``epoch_rounds`` when given, else
``ceil(epoch * expected_rounds)`` — the paper's fraction of the stream
(default 0.5, Tables 3-5). The evaluation harness sets ``expected_rounds`` to
the length of the training stream. When neither ``epoch_rounds`` nor
``expected_rounds`` is known (a service stream of unknown length), priming never
ends: the learner stays K independent Perceptrons until it is given one of them.
A round is one ``learn_one`` call (or one row of ``learn_many``); for an
active learner it is one ``query_one`` call instead (whether or not the label is
then asked for, and however late the label arrives), so ``expected_rounds`` is
the stream length in both modes.

**Active variant** (Sec. 4, docs/algorithms.md Sec. 2.7): with ``active=True``,
``query_one`` asks for the label with probability ``b / (b + |r|)``, ``r`` the
margin of the current task, ``b = sum_j |A_{i_t, j}|`` (row of the current A),
or the fixed ``sampling_b`` when given (the rule of the paper's baselines;
BATCHOPT is one, so its default is ``sampling_b = 1``). Both rules compare b
with a margin on the scale of W: during priming ``b = 1/K`` while
``A^{-1} = K I`` makes every margin K times ipl's, so the query probability is
``1 / (1 + K^2 |r_ipl|)`` — the fixed-b rule on ipl with ``b = 1/K^2``
(bench/results/omtl_tables.md measures the consequence).

**New tasks** (``add_task``) enter A as independent at the current scale: a zero
row and column with diagonal entry ``tr(A)/K`` (the mean diagonal), and
``A^{-1}`` correspondingly; the trace is renormalised at the next A update.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from learners.base import APPEND_BIAS, BUDGET, L2_NORMALIZE, Param
from learners.inputs import Batch, Vec
from learners.omtl.a_kernels import (
    HP_FIELDS,
    KIND_BATCHOPT,
    KIND_COV,
    KIND_LOGDET,
    KIND_NONE,
    KIND_VONNEUMANN,
)
from learners.omtl.compiled import CompiledLearner, KernelRows, vec_dot
from learners.omtl.kernels import weight_pass
from learners.omtl.updates import (
    batchopt_update,
    covariance_update,
    gram_after_batch,
    gram_after_rank_one,
    logdet_update,
    vonneumann_log_step,
)
from learners.params import (
    boolean,
    interval,
    non_negative,
    non_negative_int,
    one_of,
    optional,
    positive,
    positive_int,
)
from learners.perceptron.multitask import SAHA2011, MatrixPerceptron, MistakeDriven
from learners.registry import register

#: ``a_from`` for a learner whose priming never ends: no round reaches it.
_NEVER = 1 << 62
#: The kernel's ``L`` for the learners without ``log A``, and its eigenvectors for those
#: that keep none.
_NO_LOG = np.zeros((0, 0))

__all__ = ["BatchOptimal", "OMTLCovariance", "OMTLLogDet", "OMTLVonNeumann", "TaskRelationships"]


def _none_kept(logA: np.ndarray) -> np.ndarray:
    """The eigenpairs of a learner that keeps none: the identity and ``diag(log A)``
    (never read while ``eigvecs_age_`` is -1)."""
    return np.vstack([np.eye(len(logA)), np.diag(logA)[None, :]])


EPOCH = Param(
    "epoch",
    0.5,
    "Priming period as a fraction of expected_rounds (saha2011 Sec. 3.2, EPOCH = 0.5 in "
    "Tables 3-5): A is updated from round ceil(epoch * expected_rounds) on.",
    interval(0.0, 1.0),
)
EXPECTED_ROUNDS = Param(
    "expected_rounds",
    None,
    "Length of the stream the epoch fraction refers to (set by the evaluation harness). "
    "None with epoch_rounds None: priming never ends (independent Perceptrons).",
    optional(positive_int),
)
EPOCH_ROUNDS = Param(
    "epoch_rounds",
    None,
    "Priming period as a round count: A is updated on mistakes at rounds t >= epoch_rounds "
    "(1-based, Algorithm 1 line 14). Overrides epoch / expected_rounds.",
    optional(non_negative_int),
)
A_UPDATE_EVERY = Param(
    "a_update_every",
    1,
    "Update A on every m-th mistake from round EPOCH on: on a mistake whose count (all "
    "mistakes, from the first round) is a multiple of m. 1 (the default) is saha2011 "
    "Algorithm 1, every mistake. A larger m divides the O(K^3) cost of the A updates by "
    "about m, which at K = 100 is nearly all of a round's time; A then follows the "
    "weights up to m - 1 mistakes late (docs/algorithms.md Sec. 2.8).",
    positive_int,
)
NORMALIZE_TRACE = Param(
    "normalize_trace",
    True,
    "Rescale A to unit trace after every A update (docs/algorithms.md Sec. 2.5; Eqs. 3.7-3.9 do not "
    "preserve the trace themselves).",
    boolean,
)
A_UPDATE_USES = Param(
    "a_update_uses",
    "post",
    "Which weights feed the A update: 'post' (W_s, after this mistake's weight update; "
    "alternating minimisation) or 'pre' (W_{s-1}, as Eqs. 3.7-3.10 are written).",
    one_of("post", "pre"),
)
RIDGE = Param(
    "ridge",
    1e-6,
    "Ridge eps = ridge * tr(A)/K added to the covariance (3.9) and batch-optimal (3.10) "
    "matrices before inverting (docs/algorithms.md Sec. 2.5).",
    non_negative,
)
EIG_FLOOR = Param(
    "eig_floor",
    1e-12,
    "Relative eigenvalue floor of every inverse, log and exp: eigenvalues below "
    "eig_floor * (largest) are raised to it.",
    interval(0.0, 1.0, low_open=True, high_open=True),
)
ACTIVE = Param(
    "active",
    False,
    "Active-learning variant (saha2011 Sec. 4): query with probability b / (b + |margin|).",
    boolean,
)
COV_IS_A_INVERSE = Param(
    "cov_is_A_inverse",
    False,
    "Use the covariance-like matrix as A^{-1} (the learning rates, scaled to mean diagonal K) "
    "instead of as A (literal Eqs. 3.9/3.10); docs/algorithms.md Sec. 8, item 1.",
    boolean,
)


def _eta(default: float) -> Param:
    return Param(
        "eta",
        default,
        "Learning rate of A in Eqs. 3.7/3.8. The paper gives no value; the default is the grid "
        "value with the fewest online mistakes across datasets in bench/results/omtl_tables.md.",
        non_negative,
    )


ETA_SCALE = Param(
    "eta_scale",
    "trace",
    "How eta meets the Gram matrix in Eqs. 3.7/3.8: 'trace' uses eta / tr(W^T W) (scale-free, "
    "docs/algorithms.md Sec. 2.3) and 'absolute' the literal eta. With 'absolute' the step of A grows "
    "with the weights, which grow with A^{-1}: the feedback makes W overflow on long streams.",
    one_of("trace", "absolute"),
)


def _sampling_b(default: float | None) -> Param:
    return Param(
        "sampling_b",
        default,
        "Active variant: None uses b = sum_j |A_{i_t, j}| (saha2011 Sec. 4); a number is a "
        "fixed b (the baselines' rule).",
        optional(positive),
    )


_SHARED = (
    EPOCH,
    EXPECTED_ROUNDS,
    EPOCH_ROUNDS,
    A_UPDATE_EVERY,
    NORMALIZE_TRACE,
    A_UPDATE_USES,
    EIG_FLOOR,
    ACTIVE,
    BUDGET,
    APPEND_BIAS,
    L2_NORMALIZE,
)


class TaskRelationships(CompiledLearner, MatrixPerceptron):
    """Shared machinery of saha2011 Algorithm 1 (see the module docstring).

    Subclasses implement :meth:`_updated_interaction`, which returns the new
    ``(A, A^{-1})`` from the current state.

    Attributes
    ----------
    W_ : ndarray, shape (K, d)
        Task weight vectors (rows).
    A_, Ainv_ : ndarray, shape (K, K)
        The interaction matrix and its inverse.
    G_ : ndarray, shape (K, K)
        ``W W^T`` (the paper's ``W^T W``), kept incrementally.
    colsum_ : ndarray, shape (K,)
        ``W.sum(axis=1)``, kept incrementally (for the covariance, Eq. 3.9).
    n_rounds_, n_mistakes_, n_a_updates_ : int
        Rounds seen, weight updates, A updates.
    """

    state_fields: ClassVar[tuple[str, ...]] = (
        "W_",
        "Ainv_",
        "A_",
        "G_",
        "colsum_",
        "n_rounds_",
        "n_mistakes_",
        "n_a_updates_",
    )

    # ------------------------------------------------------------- set-up
    def _initial_inverse(self) -> np.ndarray:
        return float(self.n_tasks) * np.eye(self.n_tasks)

    def _init_state(self) -> None:
        super()._init_state()
        K = self.n_tasks
        self.A_ = np.eye(K) / K
        self.G_ = np.zeros((K, K))
        self.colsum_ = np.zeros(K)
        self.n_rounds_ = 0
        self.n_a_updates_ = 0

    @property
    def is_active(self) -> bool:
        """True when built with ``active=True`` (saha2011 Sec. 4)."""
        return bool(self.hyper["active"])

    @property
    def epoch_round(self) -> int | None:
        """Algorithm 1's EPOCH: the first 1-based round whose mistakes update A (None: never)."""
        if self.hyper["epoch_rounds"] is not None:
            return int(self.hyper["epoch_rounds"])
        if self.hyper["expected_rounds"] is None:
            return None
        return math.ceil(self.hyper["epoch"] * self.hyper["expected_rounds"])

    def _a_fixed_for(self, n_rounds: int) -> bool:
        """Whether A cannot change during the next ``n_rounds`` rounds."""
        start = self.epoch_round
        return start is None or self.n_rounds_ + n_rounds < start

    # ------------------------------------------------------------- rounds
    def query_one(self, x: Any, task: int) -> bool:
        """The Sec. 4 query decision; for an active learner it also counts the round."""
        decision = super().query_one(x, task)
        if self.is_active:
            self.n_rounds_ += 1
        return decision

    def _query(self, x: Vec, task: int) -> bool:
        margin = abs(x.dot(self.W_[task]))
        fixed = self.hyper["sampling_b"]
        b = float(np.abs(self.A_[task]).sum()) if fixed is None else float(fixed)
        return bool(self.rng.random() < b / (b + margin))

    def _decision(self, x: Vec, task: int) -> float:
        return vec_dot(x, self.W_[task])

    def _learn_reference(self, x: Vec, y: float, task: int) -> None:
        """The numpy round (Algorithm 1 lines 4-16), the reference of the kernels."""
        if not self.is_active:
            self.n_rounds_ += 1
        MatrixPerceptron._learn(self, x, y, task)

    # ------------------------------------------------ Algorithm 1, lines 9-16
    def _after_mistake(self, x: Vec, y: float, task: int) -> None:
        c = y * self.Ainv_[:, task]
        if self._a_fixed_for(0) or self.n_mistakes_ % int(self.hyper["a_update_every"]):
            self._track_gram(x, c)
            return
        if self.hyper["a_update_uses"] == "pre":
            new = self._updated_interaction()
            self._track_gram(x, c)
        else:
            self._track_gram(x, c)
            new = self._updated_interaction()
        self.A_, self.Ainv_ = new
        self.n_a_updates_ += 1

    def _track_gram(self, x: Vec, c: np.ndarray) -> None:
        """Fold the weight update ``W += c x^T`` (already applied to W_) into G_ and colsum_."""
        self.G_ = gram_after_rank_one(self.G_, x.dots(self.W_), c, x.sqnorm())
        self.colsum_ = self.colsum_ + c * float(x.val.sum())

    def _updated_interaction(self) -> tuple[np.ndarray, np.ndarray]:
        """The new ``(A, A^{-1})`` after a mistake (one of Eqs. 3.7-3.10)."""
        raise NotImplementedError

    def _effective_eta(self) -> float:
        """``eta``, divided by ``tr(W^T W)`` when ``eta_scale == 'trace'`` (Eqs. 3.7/3.8)."""
        eta = float(self.hyper["eta"])
        if self.hyper["eta_scale"] == "absolute":
            return eta
        tr = float(np.trace(self.G_))
        return eta / tr if tr > 0.0 else 0.0

    # ------------------------------------------------------------- batches
    def _compiled_update(self) -> tuple[int, np.ndarray]:
        """``(kind, hp)`` of the learner's A update in :mod:`learners.omtl.a_kernels`.

        ``KIND_NONE`` (the base class): the kernel leaves every A update to
        :meth:`_updated_interaction`.
        """
        return KIND_NONE, np.zeros(len(HP_FIELDS))

    def _update_hyper(self) -> np.ndarray:
        """The ``hp`` array of :data:`learners.omtl.a_kernels.HP_FIELDS` (built once)."""
        cached: np.ndarray | None = getattr(self, "_hp", None)
        if cached is not None and cached[-1] == float(self.dim):
            return cached
        h = self.hyper
        values = {
            "eta": float(h.get("eta", 0.0)),
            "eta_trace": float(h.get("eta_scale") == "trace"),
            "normalize": float(bool(h["normalize_trace"])),
            "floor": float(h["eig_floor"]),
            "ridge": float(h.get("ridge", 0.0)),
            "as_inverse": float(bool(h.get("cov_is_A_inverse", False))),
            "n_rows": float(self.dim),
        }
        self._hp = np.array([values[name] for name in HP_FIELDS])
        return self._hp

    def _log_state(self) -> np.ndarray:
        """The ``L`` array of the kernel (``log A`` for Eq. 3.8; unused, empty, otherwise)."""
        return _NO_LOG

    def _basis(self) -> np.ndarray:
        """The eigenpairs of ``log A`` the kernel warm-starts Eq. 3.8 from and writes back in
        place, (K + 1, K): the eigenvectors in rows, their eigenvalues in the last row
        (:func:`learners.omtl.a_kernels.load_basis`; empty: none kept)."""
        return _NO_LOG

    def _basis_age(self) -> int:
        """Warm starts that led to :meth:`_basis` (-1: it holds no eigenvectors)."""
        return -1

    def _keep_basis_age(self, age: int) -> None:
        """Record the kernel's count of warm starts (:meth:`_basis_age`)."""

    def _kernel(
        self, rows: KernelRows, y: np.ndarray, tasks: np.ndarray, scores: np.ndarray
    ) -> None:
        """Run the kernel (:mod:`learners.omtl.kernels`): weight updates and A updates in one call.

        The kernel applies each mistake's weight update (Eq. 3.3), its Gram tracking
        and, from round EPOCH on, the A update (Eqs. 3.7-3.10, compiled in
        :mod:`learners.omtl.a_kernels`) at the same rounds as the numpy path. It stops
        only at an A update it leaves to the learner (no compiled update, or a matrix
        that is not finite): then A is updated here by :meth:`_updated_interaction`, or
        for ``'pre'`` the reference tail :meth:`_after_mistake` runs (A from the Gram
        matrix before the mistake, then the Gram tracking).
        """
        post = self.hyper["a_update_uses"] == "post"
        start = self.epoch_round
        a_from = _NEVER if start is None else start
        step = 0 if self.is_active else 1
        kind, hp = self._compiled_update()
        counters = np.array([self.n_rounds_, self.n_mistakes_, 0, 0], dtype=np.int64)
        age = np.array([self._basis_age()], dtype=np.int64)
        basis = self._basis()
        i = 0
        while i < y.shape[0]:
            counters[2] = 0
            counters[3] = 0
            self.W_, self.Ainv_ = np.ascontiguousarray(self.W_), np.ascontiguousarray(self.Ainv_)
            self.G_, self.colsum_ = (
                np.ascontiguousarray(self.G_),
                np.ascontiguousarray(self.colsum_),
            )
            self.A_ = np.ascontiguousarray(self.A_)
            i = weight_pass(
                rows, y, tasks, i, self.W_, self.Ainv_, self.G_, self.colsum_, counters, step,
                a_from, int(self.hyper["a_update_every"]), post, kind, hp, self.A_,
                self._log_state(), basis, age, scores,
            )  # fmt: skip
            self._keep_basis_age(int(age[0]))
            self.n_rounds_, self.n_mistakes_ = int(counters[0]), int(counters[1])
            self.n_a_updates_ += int(counters[3])
            if counters[2] and post:
                self.A_, self.Ainv_ = self._updated_interaction()
                self.n_a_updates_ += 1
            elif counters[2]:
                self._after_mistake(rows.vec(i - 1), float(y[i - 1]), int(tasks[i - 1]))
            age[0] = self._basis_age()  # a numpy update leaves no eigenvectors to start from

    def _score_and_learn_batch_reference(
        self, batch: Batch, y: np.ndarray, tasks: np.ndarray
    ) -> np.ndarray:
        """The numpy batch path: the Gram-matrix solver while A stays fixed, else row by row."""
        if batch.dense is None or batch.n < 2 or not self._a_fixed_for(batch.n):
            return CompiledLearner._score_and_learn_batch_reference(self, batch, y, tasks)
        scores = MistakeDriven._score_and_learn_batch(self, batch, y, tasks)
        if not self.is_active:
            self.n_rounds_ += batch.n
        return scores

    def _batch_update(self, yX: np.ndarray, tasks: np.ndarray) -> None:
        C = self.Ainv_[:, tasks]
        self.G_ = gram_after_batch(self.G_, self.W_, C, yX)
        self.colsum_ = self.colsum_ + C @ yX.sum(axis=1)
        super()._batch_update(yX, tasks)

    # ------------------------------------------------------------- tasks
    def _add_task(self) -> None:
        K = self.n_tasks
        scale = float(np.trace(self.A_)) / K
        super()._add_task()  # W_ gains a zero row; Ainv_ an identity row and column
        self.Ainv_[K, K] = 1.0 / scale
        A = np.zeros((K + 1, K + 1))
        A[:K, :K] = self.A_
        A[K, K] = scale
        self.A_ = A
        G = np.zeros((K + 1, K + 1))
        G[:K, :K] = self.G_
        self.G_ = G
        self.colsum_ = np.append(self.colsum_, 0.0)

    relation_kind = "learned-interaction"
    relation_meaning = (
        "Learned interaction matrix A: larger |A_ij| means tasks i and j share more of "
        "their updates; it starts at I/K and changes as the tasks make mistakes."
    )

    def _relation(self) -> np.ndarray:
        return self.A_.copy()


#: Conformance sets shared by the four learners: A updates from round 100 of the suite's
#: 3000-round stream (on every mistake, and on every third), the active variant, and the
#: fraction form with the literal options.
_SWITCHING_PARAMS: tuple[dict[str, Any], ...] = (
    {"epoch_rounds": 100},
    {"epoch_rounds": 100, "a_update_every": 3},
    {"epoch_rounds": 60, "active": True},
    {"expected_rounds": 600, "epoch": 0.5, "a_update_uses": "pre", "normalize_trace": False},
)


@register
class OMTLLogDet(TaskRelationships):
    """OMTLLOG: A learned by the LogDet-divergence update, saha2011 Eq. (3.7).

    After priming, each mistake sets ``A^{-1} <- A^{-1} + eta W W^T`` (then A to
    unit trace with ``normalize_trace``). Cost of an A update O(K nnz + K^3).

    >>> import numpy as np, learners
    >>> m = learners.make(
    ...     "omtl-logdet", n_features=2, n_tasks=2, epoch_rounds=1, eta=0.5, eta_scale="absolute"
    ... )
    >>> m.learn_one(np.array([1.0, 0.0]), -1, task=0)
    >>> np.round(m.relation_matrix(), 4).tolist()
    [[0.3333, 0.0], [0.0, 0.6667]]
    """

    name = "omtl-logdet"
    summary = "OMTL with the LogDet-divergence update of the task relationship matrix"
    paper = f"{SAHA2011} (Eq. 3.7, Algorithm 1)"
    params = (_eta(0.1), ETA_SCALE, *_SHARED, _sampling_b(None))
    conformance_params = (
        {},
        *_SWITCHING_PARAMS,
        {"epoch_rounds": 100, "eta": 1e-4, "eta_scale": "absolute"},
    )

    def _compiled_update(self) -> tuple[int, np.ndarray]:
        return KIND_LOGDET, self._update_hyper()

    def _updated_interaction(self) -> tuple[np.ndarray, np.ndarray]:
        return logdet_update(
            self.Ainv_,
            self.G_,
            self._effective_eta(),
            normalize=self.hyper["normalize_trace"],
            floor=self.hyper["eig_floor"],
        )


@register
class OMTLVonNeumann(TaskRelationships):
    """OMTLVON: A learned by the von Neumann-divergence update, saha2011 Eq. (3.8).

    After priming, each mistake sets ``A <- exp(log A - eta W W^T)`` through a
    symmetric eigendecomposition, shifted by the largest exponent, floored and
    (by default) normalised to unit trace — the matrix exponentiated gradient
    form that keeps the update stable. ``log A`` is kept as state
    (:func:`learners.omtl.updates.vonneumann_log_step`), so no precision is lost
    recomputing it from A. Cost of an A update O(K nnz + K^3). The compiled update
    starts each decomposition from the eigenvectors of the one before
    (:mod:`learners.omtl.jacobi`), kept as state so that the numbers do not depend
    on how the stream is cut into calls.

    Attributes
    ----------
    logA_ : ndarray, shape (K, K)
        ``log A`` (besides the attributes of :class:`TaskRelationships`).
    eigenpairs_ : ndarray, shape (K + 1, K)
        The eigenvectors (rows ``0..K-1``, :attr:`eigvecs_`) of the last compiled
        update's decomposition and the eigenvalues of ``log A`` in them (row K,
        :attr:`log_eigvals_`): ``logA_`` is ``eigvecs_.T @ diag(log_eigvals_) @
        eigvecs_`` assembled; the next compiled update starts from this pair, not from
        ``logA_``. One array, which the kernel reads and writes in place.
    eigvecs_age_ : int
        How many warm starts led to ``eigvecs_`` since one from scratch; -1 when it
        holds none (a new learner, or after an update of the numpy path).
    """

    name = "omtl-vonneumann"
    summary = "OMTL with the von Neumann-divergence update of the task relationship matrix"
    paper = f"{SAHA2011} (Eq. 3.8, Algorithm 1)"
    params = (_eta(0.01), ETA_SCALE, *_SHARED, _sampling_b(None))
    conformance_params = _SWITCHING_PARAMS

    state_fields: ClassVar[tuple[str, ...]] = (
        *TaskRelationships.state_fields,
        "logA_",
        "eigenpairs_",
        "eigvecs_age_",
    )
    #: Fields a snapshot written before warm starts from the eigenpairs lacks (some or
    #: all): restored as "none kept".
    _WARM_START_FIELDS = ("eigenpairs_", "eigvecs_age_")

    def _init_state(self) -> None:
        super()._init_state()
        self.logA_ = -np.log(self.n_tasks) * np.eye(self.n_tasks)
        self.eigenpairs_ = _none_kept(self.logA_)
        self.eigvecs_age_ = -1

    def _set_state(self, state: Mapping[str, Any]) -> None:
        if not all(name in state for name in self._WARM_START_FIELDS):
            none_kept = _none_kept(np.asarray(state["logA_"]))
            state = {**state, "eigenpairs_": none_kept, "eigvecs_age_": -1}
        super()._set_state(state)
        self.eigvecs_age_ = int(self.eigvecs_age_)

    @property
    def eigvecs_(self) -> np.ndarray:
        """The eigenvectors (rows) kept in :attr:`eigenpairs_`."""
        return self.eigenpairs_[: self.n_tasks]

    @property
    def log_eigvals_(self) -> np.ndarray:
        """The eigenvalues of ``log A`` kept in :attr:`eigenpairs_`."""
        return self.eigenpairs_[self.n_tasks]

    def _basis(self) -> np.ndarray:
        self.eigenpairs_ = np.ascontiguousarray(self.eigenpairs_, dtype=float)
        return self.eigenpairs_

    def _basis_age(self) -> int:
        return int(self.eigvecs_age_)

    def _keep_basis_age(self, age: int) -> None:
        self.eigvecs_age_ = age

    def _compiled_update(self) -> tuple[int, np.ndarray]:
        return KIND_VONNEUMANN, self._update_hyper()

    def _log_state(self) -> np.ndarray:
        self.logA_ = np.ascontiguousarray(self.logA_)
        return self.logA_

    def _updated_interaction(self) -> tuple[np.ndarray, np.ndarray]:
        self.eigvecs_age_ = -1  # the numpy decomposition's eigenvectors are not kept
        self.logA_, A, Ainv = vonneumann_log_step(
            self.logA_,
            self.G_,
            self._effective_eta(),
            normalize=self.hyper["normalize_trace"],
            floor=self.hyper["eig_floor"],
        )
        return A, Ainv

    def _add_task(self) -> None:
        K = self.n_tasks
        super()._add_task()
        L = np.zeros((K + 1, K + 1))
        L[:K, :K] = self.logA_
        L[K, K] = np.log(self.A_[K, K])
        self.logA_ = L
        pairs = np.zeros((K + 2, K + 1))
        pairs[: K + 1] = np.eye(K + 1)  # the new task is decoupled: its own eigenvector
        pairs[:K, :K] = self.eigenpairs_[:K]
        pairs[K + 1, :K] = self.eigenpairs_[K]
        pairs[K + 1, K] = L[K, K]
        self.eigenpairs_ = pairs


@register
class OMTLCovariance(TaskRelationships):
    """OMTLCOV: A set to the covariance of the task weight vectors, saha2011 Eq. (3.9).

    ``cov(W)`` treats the d coordinates as observations and the K tasks as
    variables, computed in O(K^2) from the incremental Gram matrix and row sums.
    Literal by default (A = ridged covariance, rates from its inverse); with
    ``cov_is_A_inverse`` the covariance gives the rates directly.
    """

    name = "omtl-cov"
    summary = "OMTL with A set to the covariance of the task weight vectors"
    relation_kind = "task-covariance"
    relation_meaning = (
        "Learned matrix A set to the (ridged) covariance of the task weight vectors: "
        "positive entries mean tasks whose weights move together."
    )
    paper = f"{SAHA2011} (Eq. 3.9, Algorithm 1)"
    params = (*_SHARED, RIDGE, COV_IS_A_INVERSE, _sampling_b(None))
    conformance_params = (
        *_SWITCHING_PARAMS,
        {"epoch_rounds": 100, "cov_is_A_inverse": True, "active": True},
    )

    @classmethod
    def _check_params(cls, params: dict[str, Any]) -> None:
        if params["cov_is_A_inverse"] and not params["normalize_trace"]:
            raise ValueError(
                "cov_is_A_inverse needs normalize_trace: raw covariances as learning rates grow "
                "with the square of the weights they produce, and the weights overflow"
            )

    def _compiled_update(self) -> tuple[int, np.ndarray]:
        return KIND_COV, self._update_hyper()

    def _updated_interaction(self) -> tuple[np.ndarray, np.ndarray]:
        return covariance_update(
            self.G_,
            self.colsum_,
            self.dim,
            ridge=self.hyper["ridge"],
            normalize=self.hyper["normalize_trace"],
            as_inverse=self.hyper["cov_is_A_inverse"],
            floor=self.hyper["eig_floor"],
        )


@register
class BatchOptimal(TaskRelationships):
    """BATCHOPT: A set to the batch optimum ``(W^T W)^{1/2} / tr(.)``, saha2011 Eq. (3.10).

    Zhang and Yeung's (2010) optimal task covariance, recomputed after every
    post-priming mistake; a baseline in saha2011 (Tables 3-5), so its active
    variant uses a fixed ``sampling_b = 1`` by default. Unit trace by
    construction (``normalize_trace`` has no effect on it).
    """

    name = "batchopt"
    summary = "Online multitask Perceptron with A set to the batch-optimal (W^T W)^(1/2)/tr"
    paper = f"{SAHA2011} (Eq. 3.10, Algorithm 1)"
    params = (*_SHARED, RIDGE, COV_IS_A_INVERSE, _sampling_b(1.0))
    conformance_params = (
        *_SWITCHING_PARAMS,
        {"epoch_rounds": 100, "cov_is_A_inverse": True, "active": True, "sampling_b": None},
    )

    def _compiled_update(self) -> tuple[int, np.ndarray]:
        return KIND_BATCHOPT, self._update_hyper()

    def _updated_interaction(self) -> tuple[np.ndarray, np.ndarray]:
        return batchopt_update(
            self.G_,
            ridge=self.hyper["ridge"],
            as_inverse=self.hyper["cov_is_A_inverse"],
            floor=self.hyper["eig_floor"],
        )
