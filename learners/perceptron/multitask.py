"""The multitask Perceptron with a fixed interaction matrix, and its baselines.

* ``ipl``: K independent Perceptrons (A = I; saha2011 Table 1 "IPL").
* ``stl`` / ``pt-global``: one Perceptron pooled over all tasks (saha2011 "STL",
  zhang2018 "PT-global").
* ``cmtl``: Cavallanti, Cesa-Bianchi & Gentile's multitask Perceptron (2010,
  Fig. 1) in the form of saha2011 Eq. (2.2): on a mistake of task ``i``,
  ``w_j <- w_j + y (A^{-1})_{j,i} x`` for every task j.

This module is the numpy **reference** of these learners (the ``*Reference``
classes): it defines their mathematics, and the registered learners of
:mod:`learners.perceptron.linear` run the same rules on compiled kernels and
are checked against it (:mod:`learners.checks.kernels`). ``cmtl`` itself,
:class:`MultitaskPerceptron`, is registered here: it holds the parameters and
picks the layout class. The reference batch path
(:meth:`~learners.base.Learner.score_and_learn_many`) of the mistake-driven
learners is the exact Gram-matrix kernel of :mod:`learners.perceptron.batch`,
which the OMTL learners (:class:`MatrixPerceptron`) still use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from scipy.linalg.blas import dger

from learners.base import APPEND_BIAS, L2_NORMALIZE, Learner, Param
from learners.inputs import Batch, Vec
from learners.params import non_negative, optional, positive, square_matrix
from learners.perceptron.batch import sequential_mistakes
from learners.perceptron.interaction import (
    BFamily,
    GivenMatrix,
    Interaction,
    b_family_matrix,
    check_spd,
    graph_matrix,
    interaction_from_params,
)
from learners.registry import register

__all__ = [
    "BFamilyMultitaskPerceptronReference",
    "IndependentPerceptronsReference",
    "MatrixMultitaskPerceptronReference",
    "MatrixPerceptron",
    "MistakeDriven",
    "MultitaskPerceptron",
    "PooledPerceptronReference",
    "add_rows",
    "is_mistake",
]

SAHA2011 = (
    "Saha, Rai, Daume III, Venkatasubramanian. Online Learning of Multiple Tasks and Their "
    "Relationships. AISTATS 2011"
)
CAVALLANTI2010 = (
    "Cavallanti, Cesa-Bianchi, Gentile. Linear Algorithms for Online Multitask Classification. "
    "JMLR 11, 2010"
)
ZHANG2018 = "Zhang, Zhao, Hao, Soh, Lee. ROM: A Robust Online Multi-Task Learning Approach. 2018"


def is_mistake(score: float, y: float) -> bool:
    """True when the prediction ``SGN(score)`` (ties give +1) differs from ``y``."""
    return (score >= 0.0) != (y > 0.0)


def rank_one_update(W: np.ndarray, coef: np.ndarray, x: Vec, scale: float) -> None:
    """``W += scale * outer(coef, x)`` in place, O(K nnz), with no K x d temporary."""
    if x.idx is None:
        # W is C-ordered (K, d), so W.T is a Fortran-ordered (d, K) view BLAS updates in place.
        dger(scale, x.val, coef, a=W.T, overwrite_a=1)
    else:
        W[:, x.idx] += np.outer(scale * coef, x.val)


def add_rows(W: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """``W[rows[i]] += values[i]`` for every i, also when ``rows`` repeats."""
    if len(set(rows.tolist())) == rows.shape[0]:
        W[rows] += values
    else:
        np.add.at(W, rows, values)


class MistakeDriven(Learner):
    """Shared batch path of mistake-driven learners with a fixed task coupling.

    Subclasses provide the batch-start scores, the coupling ``c(t_k, t_j)``
    between tasks and the combined weight update; the batch is then processed
    by :func:`learners.perceptron.batch.sequential_mistakes`, which asks for the
    coupling of the mistaken rows only.
    """

    n_mistakes_: int

    def _batch_fast_path(self) -> bool:
        """Whether the coupling stays fixed over a batch (override to disable)."""
        return True

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        if batch.dense is None or batch.n < 2 or not self._batch_fast_path():
            return super()._score_and_learn_batch(batch, y, tasks)
        X = batch.dense
        z = self._batch_scores(X, tasks) * y
        yX = X * y[:, None]
        coupling = self._batch_coupling

        def rows(idx: np.ndarray) -> np.ndarray:
            # Hy[j, k] = y_j y_k c(t_k, t_j) <x_j, x_k>: the signed-margin effect of a mistake on j.
            return (yX[idx] @ yX.T) * coupling(tasks[idx], tasks)

        mistakes = sequential_mistakes(z, y, rows)
        if mistakes.size:
            self._batch_update(yX[mistakes], tasks[mistakes])
            self.n_mistakes_ += int(mistakes.size)
        return z * y / self._batch_score_divisor()

    def _batch_score_divisor(self) -> float:
        """Positive constant the batch scores and couplings are divided by (default 1).

        A learner whose decision is ``numerator / constant`` returns unscaled scores and
        couplings and the constant here, so that the kernel sums exactly what the row
        path sums (e.g. integers for integer features) and ties at 0 come out the same.
        """
        return 1.0

    def _batch_scores(self, X: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _batch_coupling(self, row_tasks: np.ndarray, tasks: np.ndarray) -> np.ndarray | float:
        """``c(t_k, t_j)`` for the mistaken rows j (tasks ``row_tasks``) and every row k.

        Shape ``(len(row_tasks), len(tasks))``, or a scalar when the coupling is constant.
        """
        raise NotImplementedError

    def _batch_update(self, yX: np.ndarray, tasks: np.ndarray) -> None:
        """Apply the updates of the mistaken rows; row i of ``yX`` is ``y_i x_i``."""
        raise NotImplementedError


class IndependentPerceptronsReference(MistakeDriven):
    """K independent Perceptrons, one per task (saha2011 Table 1, "IPL").

    Equivalent to the multitask Perceptron with ``A = I`` (docs/algorithms.md Sec. 1.2,
    b = 0). Update O(nnz), prediction O(nnz).

    Attributes
    ----------
    W_ : ndarray, shape (K, d)
        One weight vector per task.
    n_mistakes_ : int
        Number of updates made.
    """

    name = "ipl"
    summary = "K independent Perceptrons, one per task (A = I)"
    paper = SAHA2011
    params = (APPEND_BIAS, L2_NORMALIZE)
    state_fields = ("W_", "n_mistakes_")

    def _init_state(self) -> None:
        self.W_ = np.zeros((self.n_tasks, self.dim))
        self.n_mistakes_ = 0

    def _decision(self, x: Vec, task: int) -> float:
        return x.dot(self.W_[task])

    def _learn(self, x: Vec, y: float, task: int) -> None:
        if is_mistake(x.dot(self.W_[task]), y):
            x.add_to(self.W_[task], y)
            self.n_mistakes_ += 1

    def _add_task(self) -> None:
        self.W_ = np.vstack([self.W_, np.zeros((1, self.dim))])

    relation_kind = "fixed-interaction"
    relation_meaning = "Fixed identity matrix: every task learns on its own, nothing is shared."

    def _relation(self) -> np.ndarray:
        return np.eye(self.n_tasks)

    def _task_weights(self) -> np.ndarray:
        return self.W_.copy()

    def _batch_scores(self, X: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", X, self.W_[tasks])

    def _batch_coupling(self, row_tasks: np.ndarray, tasks: np.ndarray) -> np.ndarray | float:
        return np.equal.outer(row_tasks, tasks)

    def _batch_update(self, yX: np.ndarray, tasks: np.ndarray) -> None:
        add_rows(self.W_, tasks, yX)


class PooledPerceptronReference(MistakeDriven):
    """One Perceptron pooled over all tasks; the task index is ignored (saha2011 "STL").

    Attributes
    ----------
    w_ : ndarray, shape (d,)
        The shared weight vector.
    n_mistakes_ : int
        Number of updates made.
    """

    name = "stl"
    summary = "One Perceptron pooled over all tasks (task ignored)"
    paper = SAHA2011
    params = (APPEND_BIAS, L2_NORMALIZE)
    state_fields = ("w_", "n_mistakes_")

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """One shared weight vector of length ``d (+1)``, whatever the number of tasks."""
        return 8 * 2 * (int(n_features) + 1)

    def _init_state(self) -> None:
        self.w_ = np.zeros(self.dim)
        self.n_mistakes_ = 0

    def _decision(self, x: Vec, task: int) -> float:
        return x.dot(self.w_)

    def _learn(self, x: Vec, y: float, task: int) -> None:
        if is_mistake(x.dot(self.w_), y):
            x.add_to(self.w_, y)
            self.n_mistakes_ += 1

    def _add_task(self) -> None:
        """Nothing to grow: all tasks share one vector."""

    relation_kind = "fixed-interaction"
    relation_meaning = "Fixed all-ones matrix: one predictor is pooled over every task."

    def _relation(self) -> np.ndarray:
        return np.ones((self.n_tasks, self.n_tasks))

    def _task_weights(self) -> np.ndarray:
        return np.tile(self.w_, (self.n_tasks, 1))

    def _batch_scores(self, X: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        return X @ self.w_

    def _batch_coupling(self, row_tasks: np.ndarray, tasks: np.ndarray) -> np.ndarray | float:
        return 1.0

    def _batch_update(self, yX: np.ndarray, tasks: np.ndarray) -> None:
        self.w_ += yX.sum(axis=0)


class MatrixPerceptron(MistakeDriven):
    """Multitask Perceptron with an explicit ``K x K`` inverse interaction matrix.

    Keeps ``W`` (K, d) and ``A^{-1}`` and applies saha2011 Eq. (2.2): on a
    mistake of task ``i``, ``W += y * outer(A^{-1}[:, i], x)`` — O(K nnz), with
    BLAS ``dger`` in place for dense x. The base of ``cmtl`` with a user matrix
    or task graph, and of the OMTL learners (which change ``A`` over time through
    :meth:`_after_mistake`).

    Attributes
    ----------
    W_ : ndarray, shape (K, d)
        Task weight vectors (rows).
    Ainv_ : ndarray, shape (K, K)
        Inverse of the interaction matrix.
    n_mistakes_ : int
        Number of updates made.
    """

    state_fields: ClassVar[tuple[str, ...]] = ("W_", "Ainv_", "n_mistakes_")

    def _initial_inverse(self) -> np.ndarray:
        raise NotImplementedError

    def _init_state(self) -> None:
        self.W_ = np.zeros((self.n_tasks, self.dim))
        self.Ainv_ = self._initial_inverse()
        self.n_mistakes_ = 0

    def _decision(self, x: Vec, task: int) -> float:
        return x.dot(self.W_[task])

    def _learn(self, x: Vec, y: float, task: int) -> None:
        if is_mistake(x.dot(self.W_[task]), y):
            rank_one_update(self.W_, self.Ainv_[:, task], x, y)
            self.n_mistakes_ += 1
            self._after_mistake(x, y, task)

    def _after_mistake(self, x: Vec, y: float, task: int) -> None:
        """Hook run after each weight update (OMTL updates A here)."""

    def _task_weights(self) -> np.ndarray:
        return self.W_.copy()

    def _add_task(self) -> None:
        K = self.n_tasks
        self.W_ = np.vstack([self.W_, np.zeros((1, self.dim))])
        grown = np.eye(K + 1)
        grown[:K, :K] = self.Ainv_
        self.Ainv_ = grown

    def _batch_scores(self, X: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", X, self.W_[tasks])

    def _batch_coupling(self, row_tasks: np.ndarray, tasks: np.ndarray) -> np.ndarray | float:
        # c(t_k, t_j) = (A^{-1})_{t_k, t_j}; A^{-1} is symmetric.
        return self.Ainv_[row_tasks[:, None], tasks[None, :]]

    def _batch_update(self, yX: np.ndarray, tasks: np.ndarray) -> None:
        self.W_ += self.Ainv_[:, tasks] @ yX


@register
class MultitaskPerceptron(MistakeDriven):
    """The multitask Perceptron with a fixed interaction matrix A (saha2011 "CMTL").

    On a mistake of task ``i`` every task ``j`` moves by ``y (A^{-1})_{j,i} x``
    (saha2011 Eq. 2.2; Cavallanti et al. 2010, Fig. 1). A is one of:

    * the **b-family** (default) ``A_b = (1+b) I - (b/K) 1 1^T``; the default
      ``b = K`` gives ``A^{-1} = (I + 1 1^T)/(K+1)`` (saha2011 Sec. 2). When ``b``
      is left at None it tracks the current K, so :meth:`add_task` keeps ``b = K``;
    * a **task graph**: ``A = I + c L`` for the Laplacian L of the weighted
      adjacency matrix ``graph`` (docs/algorithms.md Sec. 1.2);
    * any symmetric positive definite matrix ``A``.

    The registry name ``cmtl`` is this class; building it (directly, through
    :func:`learners.make` or :meth:`from_state_dict`) returns the layout that
    suits the parameters (:meth:`layout_for`): :class:`BFamilyMultitaskPerceptron`
    for the b-family and :class:`MatrixMultitaskPerceptron` for a graph or a
    matrix. Tasks added at run time (or beyond the size of a given ``graph``/``A``)
    enter the graph and matrix forms as independent: an identity row and column.
    """

    name = "cmtl"
    conformance_params = (
        {},
        {"b": 0.0},
        {"b": 2.5, "append_bias": True, "l2_normalize": True},
        {"graph": np.array([[0, 1, 0, 0], [1, 0, 2, 0], [0, 2, 0, 1], [0, 0, 1, 0]], dtype=float)},
        {
            "A": np.array(
                [[2.0, -0.5, 0, 0], [-0.5, 2.0, -0.5, 0], [0, -0.5, 2.0, 0], [0, 0, 0, 1.0]]
            )
        },
    )
    summary = "Multitask Perceptron with a fixed interaction matrix (b-family, task graph or SPD A)"
    paper = f"{SAHA2011} (Eq. 2.2); {CAVALLANTI2010} (Fig. 1)"
    params = (
        Param(
            "b",
            None,
            "b-family coupling A = (1+b)I - (b/K)11^T; None means b = K (saha2011's CMTL). "
            "b = 0 gives independent Perceptrons.",
            optional(non_negative),
        ),
        Param(
            "graph",
            None,
            "Symmetric non-negative K x K task adjacency; A = I + graph_scale * Laplacian.",
            optional(square_matrix),
        ),
        Param("graph_scale", 1.0, "Scale c of the Laplacian in A = I + c L.", positive),
        Param(
            "A",
            None,
            "Any symmetric positive definite K x K interaction matrix.",
            optional(check_spd),
        ),
        APPEND_BIAS,
        L2_NORMALIZE,
    )

    interaction: Interaction
    #: The interaction form a layout class runs (None: the factory, any form).
    interaction_form: ClassVar[type[Interaction] | None] = None

    def __new__(cls, **kwargs: Any) -> MultitaskPerceptron:
        if cls is MultitaskPerceptron:
            params = {k: v for k, v in kwargs.items() if k not in ("n_features", "n_tasks", "seed")}
            cls = cls.layout_for(cls._resolve_params(params))
        return object.__new__(cls)

    @classmethod
    def layout_for(cls, params: Mapping[str, Any]) -> type[MultitaskPerceptron]:
        """The class that runs ``cmtl`` with the (resolved) hyperparameters ``params``.

        :class:`~learners.perceptron.linear.BFamilyMultitaskPerceptron` for the
        b-family, :class:`~learners.perceptron.linear.MatrixMultitaskPerceptron` for a
        graph or a matrix (both compiled; their numpy references are below).
        """
        from learners.perceptron.linear import (
            BFamilyMultitaskPerceptron,
            MatrixMultitaskPerceptron,
        )

        form = interaction_from_params(params)
        return (
            BFamilyMultitaskPerceptron if isinstance(form, BFamily) else MatrixMultitaskPerceptron
        )

    @classmethod
    def _check_params(cls, params: dict[str, Any]) -> None:
        given = [k for k in ("graph", "A") if params[k] is not None]
        if len(given) > 1 or (given and params["b"] is not None):
            raise ValueError("give at most one of b, graph and A")
        if params["graph"] is not None:
            graph_matrix(params["graph"], params["graph_scale"])  # validates the graph
        form = cls.interaction_form
        if form is not None and not isinstance(interaction_from_params(params), form):
            raise ValueError(f"these parameters are run by {cls.layout_for(params).__name__}")

    def interaction_matrix(self) -> np.ndarray:
        """The current ``K x K`` interaction matrix A."""
        raise NotImplementedError

    relation_kind = "fixed-interaction"
    relation_meaning = (
        "Fixed interaction matrix A chosen in the configuration, not learned; a mistake "
        "of task i moves task j by (A^-1)_ji, so negative off-diagonal entries of A mean "
        "shared updates, not opposed tasks."
    )

    def _relation(self) -> np.ndarray:
        return self.interaction_matrix()


class BFamilyMultitaskPerceptronReference(MultitaskPerceptron):
    """``cmtl`` with the b-family matrix, in the O(nnz) shared + per-task form.

    ``A_b^{-1} = (I + (b/K) 1 1^T)/(1+b)``, so with per-task Perceptron sums
    ``V`` and their total ``s``, ``w_i = (v_i + (b/K) s)/(1+b)`` (docs/algorithms.md
    Sec. 1.2, "O(nnz) trick"): an update and a prediction both cost O(nnz(x)).

    Attributes
    ----------
    V_ : ndarray, shape (K, d)
        Per-task Perceptron sums ``sum y x`` of the mistakes.
    s_ : ndarray, shape (d,)
        Their total.
    n_mistakes_ : int
        Number of updates made.
    """

    state_fields: ClassVar[tuple[str, ...]] = ("V_", "s_", "n_mistakes_")
    interaction_form = BFamily
    interaction: BFamily

    def _init_state(self) -> None:
        self.interaction = BFamily(self.hyper["b"])
        self.V_ = np.zeros((self.n_tasks, self.dim))
        self.s_ = np.zeros(self.dim)
        self.n_mistakes_ = 0

    def _b(self) -> float:
        return self.interaction.b_for(self.n_tasks)

    def interaction_matrix(self) -> np.ndarray:
        return b_family_matrix(self.n_tasks, self._b())

    def _decision(self, x: Vec, task: int) -> float:
        b = self._b()
        return (x.dot(self.V_[task]) + (b / self.n_tasks) * x.dot(self.s_)) / (1.0 + b)

    def _learn(self, x: Vec, y: float, task: int) -> None:
        if is_mistake(self._decision(x, task), y):
            x.add_to(self.V_[task], y)
            x.add_to(self.s_, y)
            self.n_mistakes_ += 1

    def _add_task(self) -> None:
        self.V_ = np.vstack([self.V_, np.zeros((1, self.dim))])

    def _task_weights(self) -> np.ndarray:
        b = self._b()
        return (self.V_ + (b / self.n_tasks) * self.s_) / (1.0 + b)

    def _batch_scores(self, X: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        # Unscaled (times 1 + b), as in _decision's numerator; see _batch_score_divisor.
        own = np.einsum("ij,ij->i", X, self.V_[tasks])
        return own + (self._b() / self.n_tasks) * (X @ self.s_)

    def _batch_coupling(self, row_tasks: np.ndarray, tasks: np.ndarray) -> np.ndarray | float:
        beta = self._b() / self.n_tasks
        return np.where(np.equal.outer(row_tasks, tasks), 1.0 + beta, beta)

    def _batch_score_divisor(self) -> float:
        return 1.0 + self._b()

    def _batch_update(self, yX: np.ndarray, tasks: np.ndarray) -> None:
        add_rows(self.V_, tasks, yX)
        self.s_ += yX.sum(axis=0)


class MatrixMultitaskPerceptronReference(MultitaskPerceptron, MatrixPerceptron):
    """``cmtl`` with a task graph or an explicit SPD ``A``: keeps ``W`` and ``A^{-1}``.

    A mistake of task ``i`` applies ``W += y * outer(A^{-1}[:, i], x)`` (saha2011
    Eq. 2.2), O(K nnz); the attributes ``W_``, ``Ainv_`` and ``n_mistakes_`` are
    those of :class:`MatrixPerceptron`.
    """

    state_fields: ClassVar[tuple[str, ...]] = ("W_", "Ainv_", "n_mistakes_")
    interaction_form = GivenMatrix

    def _init_state(self) -> None:
        self.interaction = interaction_from_params(self.hyper)
        super()._init_state()

    def _initial_inverse(self) -> np.ndarray:
        return self.interaction.inverse(self.n_tasks)

    def interaction_matrix(self) -> np.ndarray:
        return self.interaction.matrix(self.Ainv_)
