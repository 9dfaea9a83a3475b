"""The second-order multitask Perceptron (Cavallanti, Cesa-Bianchi & Gentile 2010, Sec. 4).

**Reconstruction [D]/[R].** The JMLR text of this algorithm is not available
(algorithms.md Sec. 1, "source status"); what is implemented is the
reconstruction of algorithms.md Sec. 1.3: the second-order Perceptron (SOP) of
Cesa-Bianchi, Conconi & Gentile (2005) run on the multitask embedding
``z_t = A_(x)^{-1/2} phi_t`` (``phi_t = e_{i_t} (x) x_t``, ``A_(x) = A (x) I_d``).
Its structure is [R]; the algebra below is [D]. Do not quote paper numbers
for it.

SOP with parameter ``a > 0`` predicts ``SGN(v^T (a I + S S^T + z_t z_t^T)^{-1} z_t)``
with ``v = sum_{r in M} y_r z_r`` and ``S = [z_r]_{r in M}`` over the *mistaken*
rounds M only (the current instance enters tentatively; LIBOL's ``SOP.m``, which
folds in every instance, is a different algorithm). In the raw embedding this
is the primal form (algorithms.md Sec. 1.3)::

    margin_t = v0^T (a A_(x) + sum_{r in M} phi_r phi_r^T + phi_t phi_t^T)^{-1} phi_t,
    v0 = sum_{r in M} y_r phi_r.

The learner runs the **dual** form, which works for any d: with the multitask
Gram matrix ``G_rq = (A^{-1})_{i_r i_q} x_r^T x_q`` of the mistakes, the kernel
row ``k_r = (A^{-1})_{i_r i_t} x_r^T x_t``, ``kappa = (A^{-1})_{i_t i_t} ||x_t||^2``
and ``Q = (a I + G)^{-1}``, the push-through identity and the Schur complement
of ``a I + G_+`` give exactly the primal margin [D]::

    u = Q k,    sigma = a + kappa - k^T u > 0,    margin_t = a (y_M^T u) / sigma.

On a mistake ``(x_t, i_t)`` joins M and ``Q`` grows by the block inverse::

    Q <- [[Q + u u^T / sigma, -u / sigma], [-u^T / sigma, 1 / sigma]].

Cost per round O(s nnz(x) + s^2) for s mistakes so far; memory O(s d + s^2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from learners.base import APPEND_BIAS, L2_NORMALIZE, Learner, Param, positive
from learners.inputs import Vec
from learners.perceptron.interaction import (
    b_family_matrix,
    initial_interaction_inverse,
    spd_inverse,
    uses_b_family,
)
from learners.perceptron.multitask import CAVALLANTI2010, MultitaskPerceptron, is_mistake
from learners.registry import register

__all__ = [
    "INTERACTION_PARAMS",
    "SecondOrderMultitaskPerceptron",
    "check_interaction_params",
]

CESA_BIANCHI2005 = (
    "Cesa-Bianchi, Conconi, Gentile. A Second-Order Perceptron Algorithm. SIAM J. Comput. 34, 2005"
)

#: The interaction-matrix hyperparameters of ``cmtl`` (b-family, task graph or SPD A).
INTERACTION_PARAMS: tuple[Param, ...] = tuple(
    p for p in MultitaskPerceptron.params if p.name in ("b", "graph", "graph_scale", "A")
)


def check_interaction_params(params: Mapping[str, Any]) -> None:
    """At most one of ``b``, ``graph`` and ``A``; the graph must be valid (as for ``cmtl``)."""
    MultitaskPerceptron._check_params(dict(params))


def grown_interaction_inverse(params: Mapping[str, Any], Ainv: np.ndarray) -> np.ndarray:
    """``A^{-1}`` after one task is added: b-family recomputed, other forms get an identity row."""
    K = Ainv.shape[0] + 1
    if uses_b_family(params):
        return initial_interaction_inverse(params, K)
    grown = np.eye(K)
    grown[: K - 1, : K - 1] = Ainv
    return grown


def interaction_matrix(params: Mapping[str, Any], Ainv: np.ndarray) -> np.ndarray:
    """The ``K x K`` interaction matrix A itself."""
    K = Ainv.shape[0]
    if uses_b_family(params):
        b = params["b"]
        return b_family_matrix(K, float(K if b is None else b))
    return spd_inverse(Ainv)


@register
class SecondOrderMultitaskPerceptron(Learner):
    """Second-order multitask Perceptron — a reconstruction [D]/[R] (algorithms.md Sec. 1.3).

    The JMLR 2010 text (Cavallanti et al., Sec. 4) is missing, so this is the
    second-order Perceptron of Cesa-Bianchi, Conconi & Gentile (2005) on the
    multitask embedding ``A_(x)^{-1/2} phi_t``: predict
    ``SGN(v0^T (a A_(x) + sum_M phi phi^T + phi_t phi_t^T)^{-1} phi_t)``, where only
    mistaken rounds M enter the matrix. Run in the dual form with block / Schur
    updates of ``(a I + G)^{-1}`` (module docstring), which equals that primal
    margin exactly and works for any d; O(s nnz + s^2) per round after s
    mistakes.

    The interaction matrix A is chosen as for ``cmtl``: the b-family (default
    ``b = K``), a task graph ``A = I + c L``, or any SPD ``A``. When the b-family
    follows K (``b`` None) or ``b`` is fixed, :meth:`add_task` changes ``A^{-1}``
    for every task, so ``(a I + G)^{-1}`` is rebuilt once, in O(s^2 d + s^3).

    There is no fixed linear predictor (the current instance enters the matrix),
    so :meth:`task_weights` is None.

    Attributes
    ----------
    Ainv_ : ndarray, shape (K, K)
        ``A^{-1}``.
    n_mistakes_ : int
        ``s``, the number of mistakes (rows of the dual state).
    state keys ``X_``, ``y_``, ``tasks_``, ``Q_``
        The mistaken (preprocessed) instances, labels, tasks and ``(a I + G)^{-1}``.
    """

    name = "cmtl-second-order"
    summary = "Second-order multitask Perceptron (reconstruction; dual form, any A)"
    paper = f"{CAVALLANTI2010} (Sec. 4, reconstructed); {CESA_BIANCHI2005}"
    params: ClassVar[tuple[Param, ...]] = (
        Param(
            "a",
            1.0,
            "SOP regulariser a > 0 in (a A + sum phi phi^T)^{-1}; tune on a log grid.",
            positive,
        ),
        *INTERACTION_PARAMS,
        APPEND_BIAS,
        L2_NORMALIZE,
    )
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"a": 10.0, "b": 1.5, "append_bias": True, "l2_normalize": True},
        {"graph": np.array([[0, 1, 0, 0], [1, 0, 2, 0], [0, 2, 0, 1], [0, 0, 1, 0]], dtype=float)},
    )
    state_fields: ClassVar[tuple[str, ...]] = ("Ainv_", "X_", "y_", "tasks_", "Q_", "n_mistakes_")

    _X: np.ndarray
    _y: np.ndarray
    _t: np.ndarray
    _Q: np.ndarray

    @classmethod
    def _check_params(cls, params: dict[str, Any]) -> None:
        check_interaction_params(params)

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """The interaction inverse (K x K) and the dual buffers at their first
        capacity of 16 mistakes; the buffers grow with the number of mistakes
        (O(m d + m^2)), which no shape-based estimate can bound."""
        d, K, m = int(n_features) + 1, int(n_tasks), 16
        return 8 * (K * K + m * d + 2 * m + m * m)

    # ----------------------------------------------------------- state
    def _init_state(self) -> None:
        self.Ainv_ = initial_interaction_inverse(self.hyper, self.n_tasks)
        self.n_mistakes_ = 0
        self._allocate(16)

    def _allocate(self, capacity: int) -> None:
        """(Re)allocate the dual buffers with room for ``capacity`` mistakes, keeping s rows."""
        s = self.n_mistakes_
        X = np.zeros((capacity, self.dim))
        y = np.zeros(capacity)
        tasks = np.zeros(capacity, dtype=np.int64)
        Q = np.zeros((capacity, capacity))
        if s:
            X[:s], y[:s], tasks[:s], Q[:s, :s] = (
                self._X[:s],
                self._y[:s],
                self._t[:s],
                self._Q[:s, :s],
            )
        self._X, self._y, self._t, self._Q = X, y, tasks, Q

    def _get_state(self) -> dict[str, Any]:
        s = self.n_mistakes_
        return {
            "Ainv_": self.Ainv_,
            "X_": self._X[:s],
            "y_": self._y[:s],
            "tasks_": self._t[:s],
            "Q_": self._Q[:s, :s],
            "n_mistakes_": s,
        }

    def _set_state(self, state: Mapping[str, Any]) -> None:
        missing = set(self.state_fields) - set(state)
        if missing:
            raise ValueError(f"state is missing {sorted(missing)}")
        s = int(state["n_mistakes_"])
        self.Ainv_ = np.array(state["Ainv_"], dtype=np.float64)
        self.n_mistakes_ = 0
        self._allocate(max(16, s))
        self._X[:s] = np.asarray(state["X_"], dtype=np.float64).reshape(s, self.dim)
        self._y[:s] = np.asarray(state["y_"], dtype=np.float64).reshape(s)
        self._t[:s] = np.asarray(state["tasks_"], dtype=np.int64).reshape(s)
        self._Q[:s, :s] = np.asarray(state["Q_"], dtype=np.float64).reshape(s, s)
        self.n_mistakes_ = s

    # ----------------------------------------------------------- mathematics
    def _parts(self, x: Vec, task: int) -> tuple[np.ndarray, float]:
        """``u = Q k`` (k the kernel row of ``(x, task)``) and the Schur complement ``sigma``."""
        s = self.n_mistakes_
        k = self.Ainv_[self._t[:s], task] * x.dots(self._X[:s])
        u = self._Q[:s, :s] @ k
        kappa = float(self.Ainv_[task, task]) * x.sqnorm()
        sigma = float(self.hyper["a"]) + kappa - float(k @ u)
        return u, sigma

    def _margin(self, u: np.ndarray, sigma: float) -> float:
        return float(self.hyper["a"]) * float(self._y[: self.n_mistakes_] @ u) / sigma

    def _decision(self, x: Vec, task: int) -> float:
        if self.n_mistakes_ == 0:
            return 0.0
        u, sigma = self._parts(x, task)
        return self._margin(u, sigma)

    def _learn(self, x: Vec, y: float, task: int) -> None:
        u, sigma = self._parts(x, task)
        margin = self._margin(u, sigma) if self.n_mistakes_ else 0.0
        if not is_mistake(margin, y):
            return
        s = self.n_mistakes_
        if s == self._X.shape[0]:
            self._allocate(2 * s)
        Q = self._Q
        Q[:s, :s] += np.outer(u, u / sigma)
        Q[:s, s] = -u / sigma
        Q[s, :s] = Q[:s, s]
        Q[s, s] = 1.0 / sigma
        self._X[s] = x.dense()
        self._y[s] = y
        self._t[s] = task
        self.n_mistakes_ = s + 1

    def _add_task(self) -> None:
        self.Ainv_ = grown_interaction_inverse(self.hyper, self.Ainv_)
        if uses_b_family(self.hyper):
            self._rebuild_inverse()

    def _rebuild_inverse(self) -> None:
        """Recompute ``Q = (a I + G)^{-1}`` from the stored mistakes (after A changed)."""
        s = self.n_mistakes_
        if s == 0:
            return
        X, t = self._X[:s], self._t[:s]
        G = self.Ainv_[t[:, None], t[None, :]] * (X @ X.T)
        self._Q[:s, :s] = spd_inverse(float(self.hyper["a"]) * np.eye(s) + G)

    def _relation(self) -> np.ndarray:
        return interaction_matrix(self.hyper, self.Ainv_)
