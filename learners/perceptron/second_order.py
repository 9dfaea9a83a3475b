"""The second-order multitask Perceptron (Cavallanti, Cesa-Bianchi & Gentile 2010, Sec. 4).

**Reconstruction [D]/[R].** The JMLR text of this algorithm is not available
(docs/algorithms.md Sec. 1, "source status"); what is implemented is the
reconstruction of docs/algorithms.md Sec. 1.3: the second-order Perceptron (SOP) of
Cesa-Bianchi, Conconi & Gentile (2005) run on the multitask embedding
``z_t = A_(x)^{-1/2} phi_t`` (``phi_t = e_{i_t} (x) x_t``, ``A_(x) = A (x) I_d``).
Its structure is [R]; the algebra below is [D]. Do not quote paper numbers
for it.

SOP with parameter ``a > 0`` predicts ``SGN(v^T (a I + S S^T + z_t z_t^T)^{-1} z_t)``
with ``v = sum_{r in M} y_r z_r`` and ``S = [z_r]_{r in M}`` over the *mistaken*
rounds M only (the current instance enters tentatively; LIBOL's ``SOP.m``, which
folds in every instance, is a different algorithm). In the raw embedding this
is the primal form (docs/algorithms.md Sec. 1.3)::

    margin_t = v0^T (a A_(x) + sum_{r in M} phi_r phi_r^T + phi_t phi_t^T)^{-1} phi_t,
    v0 = sum_{r in M} y_r phi_r.

The learner runs the **dual** form, which works for any d: with the multitask
Gram matrix ``G_rq = (A^{-1})_{i_r i_q} x_r^T x_q`` of the mistakes, the kernel
row ``k_r = (A^{-1})_{i_r i_t} x_r^T x_t``, ``kappa = (A^{-1})_{i_t i_t} ||x_t||^2``
and ``Q = (a I + G)^{-1}``, the push-through identity and the Schur complement
of ``a I + G_+`` give exactly the primal margin [D]::

    u = Q k,    sigma = a + kappa - k^T u >= a,    margin_t = a (y_M^T u) / sigma.

``sigma >= a`` because the Gram matrix of the mistakes and ``x_t`` is positive
semi-definite. On rows of huge values (about 1e9 and above) rounding can take the
computed ``sigma`` below ``a``, to 0 and a division by zero: it is kept at ``a``.

On a mistake ``(x_t, i_t)`` joins M and ``Q`` grows by the block inverse::

    Q <- [[Q + u u^T / sigma, -u / sigma], [-u^T / sigma, 1 / sigma]].

Cost per round O(s nnz(x) + s^2) for s mistakes so far; memory O(s d + s^2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from learners.base import APPEND_BIAS, L2_NORMALIZE, Learner, Param
from learners.inputs import Batch, Vec
from learners.kernels import batch_rows, csr_arrays, kernel_array, row_of
from learners.params import positive
from learners.perceptron import second_order_kernels
from learners.perceptron.interaction import Interaction, interaction_from_params, spd_inverse
from learners.perceptron.multitask import CAVALLANTI2010, MultitaskPerceptron, is_mistake
from learners.registry import register

__all__ = [
    "INTERACTION_PARAMS",
    "ROWS_KEYS",
    "SecondOrderMultitaskPerceptron",
    "SecondOrderMultitaskPerceptronReference",
    "dual_state",
    "rows_state",
    "check_interaction_params",
]

CESA_BIANCHI2005 = (
    "Cesa-Bianchi, Conconi, Gentile. A Second-Order Perceptron Algorithm. SIAM J. Comput. 34, 2005"
)

#: The interaction-matrix hyperparameters of ``cmtl`` (b-family, task graph or SPD A).
INTERACTION_PARAMS: tuple[Param, ...] = tuple(
    p for p in MultitaskPerceptron.params if p.name in ("b", "graph", "graph_scale", "A")
)


#: State keys of the stored mistaken rows (CSR arrays).
ROWS_KEYS = ("X_indptr_", "X_indices_", "X_data_")


def rows_state(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray) -> dict[str, np.ndarray]:
    """The state entries of the stored rows, with int64 indices."""
    return {
        "X_indptr_": np.asarray(indptr, dtype=np.int64),
        "X_indices_": np.asarray(indices, dtype=np.int64),
        "X_data_": np.asarray(data, dtype=np.float64),
    }


def dual_state(state: Mapping[str, Any], dim: int) -> tuple[int, sp.csr_matrix]:
    """``s`` and the stored rows (CSR, s x dim) of a state; a dense ``X_`` is accepted too."""
    required = {"Ainv_", "y_", "tasks_", "Q_", "n_mistakes_"}
    has_rows = set(ROWS_KEYS) <= set(state) or "X_" in state
    missing = sorted(required - set(state)) + ([] if has_rows else list(ROWS_KEYS))
    if missing:
        raise ValueError(f"state is missing {missing}")
    s = int(state["n_mistakes_"])
    if "X_" in state:
        rows = sp.csr_matrix(np.asarray(state["X_"], dtype=np.float64).reshape(s, dim))
    else:
        parts = (np.asarray(state[k]) for k in ("X_data_", "X_indices_", "X_indptr_"))
        data, indices, indptr = parts
        rows = sp.csr_matrix((data.astype(np.float64), indices, indptr), shape=(s, dim))
    return s, rows


def check_interaction_params(params: Mapping[str, Any]) -> None:
    """At most one of ``b``, ``graph`` and ``A``; the graph must be valid (as for ``cmtl``)."""
    MultitaskPerceptron._check_params(dict(params))


class SecondOrderMultitaskPerceptronReference(Learner):
    """Second-order multitask Perceptron — a reconstruction [D]/[R] (docs/algorithms.md Sec. 1.3).

    The numpy reference (dense rows); the registered ``cmtl-second-order``
    (:class:`SecondOrderMultitaskPerceptron`) runs the same rule on compiled
    kernels with the mistaken rows stored sparse.

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
    state keys ``X_indptr_``, ``X_indices_``, ``X_data_``, ``y_``, ``tasks_``, ``Q_``
        The mistaken (preprocessed) instances as CSR arrays, their labels and tasks,
        and ``(a I + G)^{-1}``. States with a dense ``X_`` (s x d) load as well.
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
    state_fields: ClassVar[tuple[str, ...]] = (
        "Ainv_",
        *ROWS_KEYS,
        "y_",
        "tasks_",
        "Q_",
        "n_mistakes_",
    )

    interaction: Interaction
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
        self.interaction = interaction_from_params(self.hyper)
        self.Ainv_ = self.interaction.inverse(self.n_tasks)
        self.n_mistakes_ = 0
        self._allocate(16)

    def _allocate(self, capacity: int, nnz_capacity: int = 0) -> None:
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

    def _rows(self) -> sp.csr_matrix:
        """The stored mistaken rows, ``s x dim``."""
        return sp.csr_matrix(self._X[: self.n_mistakes_])

    def _store_rows(self, rows: sp.csr_matrix) -> None:
        """Put the mistaken rows of a restored state into the (allocated) buffers."""
        self._X[: rows.shape[0]] = rows.toarray()

    def _get_state(self) -> dict[str, Any]:
        s = self.n_mistakes_
        rows = self._rows()
        return {
            "Ainv_": self.Ainv_,
            **rows_state(rows.indptr, rows.indices, rows.data),
            "y_": self._y[:s],
            "tasks_": self._t[:s],
            "Q_": self._Q[:s, :s],
            "n_mistakes_": s,
        }

    def _set_state(self, state: Mapping[str, Any]) -> None:
        s, rows = dual_state(state, self.dim)
        rows.sort_indices()
        self.Ainv_ = np.ascontiguousarray(state["Ainv_"], dtype=np.float64)
        self.n_mistakes_ = 0
        self._allocate(max(16, s), rows.nnz)
        self._store_rows(rows)
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
        a = float(self.hyper["a"])
        sigma = a + kappa - float(k @ u)
        if sigma < a:  # >= a in exact arithmetic (module docstring); rounding on huge rows
            sigma = a
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
        self.Ainv_ = np.ascontiguousarray(self.interaction.grown_inverse(self.Ainv_))
        if self.interaction.follows_task_count:
            self._rebuild_inverse()

    def _rebuild_inverse(self) -> None:
        """Recompute ``Q = (a I + G)^{-1}`` from the stored mistakes (after A changed)."""
        s = self.n_mistakes_
        if s == 0:
            return
        X, t = self._rows(), self._t[:s]
        G = self.Ainv_[t[:, None], t[None, :]] * (X @ X.T).toarray()
        self._Q[:s, :s] = spd_inverse(float(self.hyper["a"]) * np.eye(s) + G)

    relation_kind = "fixed-interaction"
    relation_meaning = (
        "Fixed interaction matrix A chosen in the configuration, not learned; negative "
        "off-diagonal entries of A mean shared updates, not opposed tasks."
    )

    def _relation(self) -> np.ndarray:
        return self.interaction.matrix(self.Ainv_)


_A = np.ndarray
#: The dual state as the kernels take it: ptr, idx, val, y, tasks, Q, counts, Ainv, scratch.
_DualArrays = tuple[_A, _A, _A, _A, _A, _A, _A, _A, _A]


@register
class SecondOrderMultitaskPerceptron(SecondOrderMultitaskPerceptronReference):
    """Second-order multitask Perceptron on compiled kernels, mistaken rows stored sparse.

    The rule of :class:`SecondOrderMultitaskPerceptronReference` (docs/algorithms.md
    Sec. 1.3, a reconstruction) run by :mod:`learners.perceptron.second_order_kernels`:
    an event costs O(s (nnz + s)) and memory is O(s nnz + s^2) after s mistakes,
    independent of d, so sparse high-dimensional streams (d = 100,000) work. The
    dual form's limit is s: the cost per event and ``Q`` (s x s) grow with the
    number of mistakes (10,000 mistakes hold an 800 MB ``Q``).
    """

    reference_class = SecondOrderMultitaskPerceptronReference

    _ptr: np.ndarray
    _idx: np.ndarray
    _val: np.ndarray
    _counts: np.ndarray
    _scratch: np.ndarray

    def _allocate(self, capacity: int, nnz_capacity: int = 0) -> None:
        """(Re)allocate the sparse dual buffers with room for ``capacity`` mistakes."""
        s = self.n_mistakes_
        used = int(self._ptr[s]) if s else 0
        nnz_capacity = max(nnz_capacity, 16 * min(self.dim, 64), used)
        ptr = np.zeros(capacity + 1, dtype=np.int64)
        idx = np.zeros(nnz_capacity, dtype=np.int64)
        val = np.zeros(nnz_capacity)
        y = np.zeros(capacity)
        tasks = np.zeros(capacity, dtype=np.int64)
        Q = np.zeros((capacity, capacity))
        if s:
            ptr[: s + 1], idx[:used], val[:used] = (
                self._ptr[: s + 1],
                self._idx[:used],
                self._val[:used],
            )
            y[:s], tasks[:s], Q[:s, :s] = self._y[:s], self._t[:s], self._Q[:s, :s]
        self._ptr, self._idx, self._val, self._y, self._t, self._Q = ptr, idx, val, y, tasks, Q
        self._counts = np.array([s, used], dtype=np.int64)
        if not hasattr(self, "_scratch"):
            self._scratch = np.zeros(self.dim)

    def _grow(self, row_nnz: int) -> None:
        s, used = int(self._counts[0]), int(self._counts[1])
        rows = self._Q.shape[0] * 2 if s + 1 > self._Q.shape[0] else self._Q.shape[0]
        self._allocate(rows, max(2 * self._val.shape[0], used + row_nnz))

    def _rows(self) -> sp.csr_matrix:
        s = self.n_mistakes_
        used = int(self._ptr[s])
        return sp.csr_matrix(
            (self._val[:used], self._idx[:used], self._ptr[: s + 1]), shape=(s, self.dim)
        )

    def _store_rows(self, rows: sp.csr_matrix) -> None:
        s = rows.shape[0]
        self._ptr[: s + 1] = rows.indptr
        self._idx[: rows.nnz] = rows.indices
        self._val[: rows.nnz] = rows.data
        self._counts[:] = (s, rows.nnz)

    def _state_arrays(self) -> _DualArrays:
        return (
            self._ptr, self._idx, self._val, self._y, self._t, self._Q,
            self._counts, self.Ainv_, self._scratch,
        )  # fmt: skip

    def _run(self, x: Vec, y: float, task: int, learn: bool) -> float:
        idx, val = row_of(x)
        while True:
            margin, _, status = second_order_kernels.step(
                *self._state_arrays(), idx, val, y, task, float(self.hyper["a"]), learn
            )
            if status != second_order_kernels.NEED_ROOM:
                self.n_mistakes_ = int(self._counts[0])
                return float(margin)
            self._grow(x.nnz)

    def _decision(self, x: Vec, task: int) -> float:
        return self._run(x, 0.0, task, False)

    def _learn(self, x: Vec, y: float, task: int) -> None:
        self._run(x, y, task, True)

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        labels, rows, scores = batch_rows(y, tasks)
        a = float(self.hyper["a"])
        start = 0
        while start < batch.n:
            if batch.dense is not None:
                X = kernel_array(batch.dense, np.float64)
                start = second_order_kernels.learn_dense(
                    *self._state_arrays(), X, labels, rows, a, start, scores
                )
                row_nnz = self.dim
            else:
                indptr, indices, data = csr_arrays(batch)
                start = second_order_kernels.learn_csr(
                    *self._state_arrays(), indptr, indices, data, labels, rows, a, start, scores
                )
                row_nnz = int(indptr[start + 1] - indptr[start]) if start < batch.n else 0
            self.n_mistakes_ = int(self._counts[0])
            if start < batch.n:
                self._grow(row_nnz)
        return scores
