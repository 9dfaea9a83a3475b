"""The multitask Perceptron with a fixed interaction matrix, and its baselines.

* ``ipl``: K independent Perceptrons (A = I; saha2011 Table 1 "IPL").
* ``stl`` / ``pt-global``: one Perceptron pooled over all tasks (saha2011 "STL",
  zhang2018 "PT-global").
* ``cmtl``: Cavallanti, Cesa-Bianchi & Gentile's multitask Perceptron (2010,
  Fig. 1) in the form of saha2011 Eq. (2.2): on a mistake of task ``i``,
  ``w_j <- w_j + y (A^{-1})_{j,i} x`` for every task j.

All of them are mistake-driven, so their batch path
(:meth:`~learners.base.Learner.score_and_learn_many`) uses the exact Gram-matrix
kernel of :mod:`learners.perceptron.batch`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.linalg.blas import dger

from learners.base import (
    APPEND_BIAS,
    L2_NORMALIZE,
    Learner,
    Param,
    non_negative,
    optional,
    positive,
)
from learners.inputs import Batch, Vec
from learners.perceptron.batch import sequential_mistakes
from learners.perceptron.interaction import (
    b_family_matrix,
    check_spd,
    graph_matrix,
    initial_interaction_inverse,
    spd_inverse,
    uses_b_family,
)
from learners.registry import register

__all__ = [
    "GlobalPerceptron",
    "IndependentPerceptrons",
    "MatrixPerceptron",
    "MistakeDriven",
    "MultitaskPerceptron",
    "PooledPerceptron",
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


@register
class IndependentPerceptrons(MistakeDriven):
    """K independent Perceptrons, one per task (saha2011 Table 1, "IPL").

    Equivalent to the multitask Perceptron with ``A = I`` (algorithms.md Sec. 1.2,
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


@register
class PooledPerceptron(MistakeDriven):
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


@register
class GlobalPerceptron(PooledPerceptron):
    """PT-global: one Perceptron for all tasks, the baseline of zhang2018 (Table I).

    The same algorithm as ``stl``, listed under the name the ROM paper uses.
    """

    name = "pt-global"
    summary = "PT-global: one Perceptron for all tasks (zhang2018 baseline)"
    paper = ZHANG2018


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


def _square_matrix(v: Any) -> np.ndarray:
    M = np.array(v, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"must be a square matrix, got shape {M.shape}")
    return M


@register
class MultitaskPerceptron(MatrixPerceptron):
    """The multitask Perceptron with a fixed interaction matrix A (saha2011 "CMTL").

    On a mistake of task ``i`` every task ``j`` moves by ``y (A^{-1})_{j,i} x``
    (saha2011 Eq. 2.2; Cavallanti et al. 2010, Fig. 1). A is one of:

    * the **b-family** (default) ``A_b = (1+b) I - (b/K) 1 1^T``, with
      ``A_b^{-1} = (I + (b/K) 1 1^T)/(1+b)``; the default ``b = K`` gives
      ``A^{-1} = (I + 1 1^T)/(K+1)`` (saha2011 Sec. 2). Implemented in the
      shared + per-task form of algorithms.md Sec. 1.2: with per-task
      Perceptron sums ``V`` and their total ``s``,
      ``w_i = (v_i + (b/K) s)/(1+b)``, so an update and a prediction both cost
      O(nnz(x)). When ``b`` is left at None it tracks the current K, so
      :meth:`add_task` keeps ``b = K``;
    * a **task graph**: ``A = I + c L`` for the Laplacian L of the weighted
      adjacency matrix ``graph`` (algorithms.md Sec. 1.2);
    * any symmetric positive definite matrix ``A``.

    Tasks added at run time (or beyond the size of a given ``graph``/``A``) enter
    the graph and matrix forms as independent: an identity row and column.

    Attributes
    ----------
    V_, s_ : ndarray, shapes (K, d) and (d,)
        b-family form: per-task Perceptron sums and their total.
    W_, Ainv_ : ndarray, shapes (K, d) and (K, K)
        Graph / matrix form: the task weights and ``A^{-1}``.
    n_mistakes_ : int
        Number of updates made.
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
            optional(_square_matrix),
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

    @classmethod
    def _check_params(cls, params: dict[str, Any]) -> None:
        given = [k for k in ("graph", "A") if params[k] is not None]
        if len(given) > 1 or (given and params["b"] is not None):
            raise ValueError("give at most one of b, graph and A")
        if params["graph"] is not None:
            graph_matrix(params["graph"], params["graph_scale"])  # validates the graph

    @property
    def uses_b_family(self) -> bool:
        """True when A is the b-family matrix (the O(nnz) shared + per-task form)."""
        return uses_b_family(self.hyper)

    def _b(self) -> float:
        b = self.hyper["b"]
        return float(self.n_tasks if b is None else b)

    def interaction_matrix(self) -> np.ndarray:
        """The current ``K x K`` interaction matrix A."""
        if self.uses_b_family:
            return b_family_matrix(self.n_tasks, self._b())
        return spd_inverse(self.Ainv_)

    # -- state layout depends on the form of A
    def _init_state(self) -> None:
        self.n_mistakes_ = 0
        if self.uses_b_family:
            self.V_ = np.zeros((self.n_tasks, self.dim))
            self.s_ = np.zeros(self.dim)
        else:
            super()._init_state()

    def _initial_inverse(self) -> np.ndarray:
        return initial_interaction_inverse(self.hyper, self.n_tasks)

    def _get_state(self) -> dict[str, Any]:
        if self.uses_b_family:
            return {"V_": self.V_, "s_": self.s_, "n_mistakes_": self.n_mistakes_}
        return super()._get_state()

    def _set_state(self, state: Any) -> None:
        if self.uses_b_family:
            self.V_ = np.array(state["V_"], dtype=np.float64)
            self.s_ = np.array(state["s_"], dtype=np.float64)
            self.n_mistakes_ = int(state["n_mistakes_"])
        else:
            super()._set_state(state)

    # -- b-family fast form (algorithms.md Sec. 1.2, "O(nnz) trick")
    def _decision(self, x: Vec, task: int) -> float:
        if not self.uses_b_family:
            return super()._decision(x, task)
        b = self._b()
        return (x.dot(self.V_[task]) + (b / self.n_tasks) * x.dot(self.s_)) / (1.0 + b)

    def _learn(self, x: Vec, y: float, task: int) -> None:
        if not self.uses_b_family:
            super()._learn(x, y, task)
            return
        if is_mistake(self._decision(x, task), y):
            x.add_to(self.V_[task], y)
            x.add_to(self.s_, y)
            self.n_mistakes_ += 1

    def _add_task(self) -> None:
        if self.uses_b_family:
            self.V_ = np.vstack([self.V_, np.zeros((1, self.dim))])
        else:
            super()._add_task()

    def _relation(self) -> np.ndarray:
        return self.interaction_matrix()

    def _task_weights(self) -> np.ndarray:
        if not self.uses_b_family:
            return super()._task_weights()
        b = self._b()
        return (self.V_ + (b / self.n_tasks) * self.s_) / (1.0 + b)

    def _batch_scores(self, X: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        if not self.uses_b_family:
            return super()._batch_scores(X, tasks)
        # Unscaled (times 1 + b), as in _decision's numerator; see _batch_score_divisor.
        own = np.einsum("ij,ij->i", X, self.V_[tasks])
        return own + (self._b() / self.n_tasks) * (X @ self.s_)

    def _batch_coupling(self, row_tasks: np.ndarray, tasks: np.ndarray) -> np.ndarray | float:
        if not self.uses_b_family:
            return super()._batch_coupling(row_tasks, tasks)
        beta = self._b() / self.n_tasks
        return np.where(np.equal.outer(row_tasks, tasks), 1.0 + beta, beta)

    def _batch_score_divisor(self) -> float:
        return 1.0 + self._b() if self.uses_b_family else 1.0

    def _batch_update(self, yX: np.ndarray, tasks: np.ndarray) -> None:
        if not self.uses_b_family:
            super()._batch_update(yX, tasks)
            return
        add_rows(self.V_, tasks, yX)
        self.s_ += yX.sum(axis=0)
