"""MMPERC: the multitask Perceptron for tasks in heterogeneous spaces (cavallanti2010 Sec. 6).

docs/algorithms.md Sec. 1.5. Each round reveals the task ``i_t`` and all K
instances ``x_{j,t} in R^{d_j}``. With ``phi_{j,t}`` view ``j`` embedded in
block ``j`` of ``R^D`` (``D = sum_j d_j``) and ``phi_t = sum_j phi_{j,t}``, Fig. 3
of the paper reads, with ``b > 0``, ``A_0 = I_D``, ``v_0 = 0``::

    z_t   = sqrt(bK) (phi_{i_t,t} - phi_t / K)          M_t = z_t z_t^T
    A_t   = A_{s-1} + M_t                               (tentative)
    yhat  = SGN(v_{s-1}^T A_t^{-1} phi_{i_t,t})
    on a mistake only:  v_s = v_{s-1} + y_t phi_{i_t,t},  A_s = A_t.

``u^T M_t u = bK (u_{i_t}^T x_{i_t,t} - (1/K) sum_j u_j^T x_{j,t})^2`` is the
margin-deviation co-regulariser of Eq. (13); ``M_t phi_t = 0`` and, for unit
views, ``phi_i^T (I + M_t)^{-1} phi_i = (K(b+1) - b)/(bK(K-1) + K)`` (the proof
of Theorem 6, around Eq. (17)). ``b = 0`` gives ``A = I``: K independent
first-order Perceptrons (the remark after Eq. (15)).

Two forms, equal in exact arithmetic:

* **primal** — keep ``A_{s-1}^{-1}`` (D x D) and apply the tentative rank-one
  term by Sherman-Morrison: with ``a = A^{-1} phi_i``, ``c = A^{-1} z``,
  ``margin = v^T a - (v^T c)(z^T a)/(1 + z^T c)``; a mistake commits
  ``A^{-1} <- A^{-1} - c c^T/(1 + z^T c)``. O(D^2) per round.
* **dual** (Sec. 6.1) — ``A_s = I + Z_s Z_s^T`` with ``Z_s`` the z's of the
  mistaken rounds. Keep ``Q = (I_s + Z^T Z)^{-1}``, ``a = Z^T v`` and ``v``; with
  the tentative column ``z`` the block inverse of ``I + Z_t^T Z_t`` gives,
  for ``k = Z^T z``, ``u = Q k``, ``sigma = 1 + z^T z - k^T u`` (at least 1; kept
  at 1 where rounding takes it below, on rows of values near 1e9 and above),
  ``g = Z^T phi_i``, ``alpha = v^T z``, ``gamma = z^T phi_i``::

      margin = v^T phi_i - a^T Q g - (a^T u - alpha)(u^T g - gamma)/sigma

  (the paper's ``y^T S^T phi - y^T S^T Z (I + Z^T Z)^{-1} Z^T phi`` with
  ``S y = v``). A mistake grows ``Q`` by that block and appends ``z``.
  O(s D + s^2) per round after s mistakes.

``form="auto"`` picks primal when ``D <= AUTO_PRIMAL_MAX_DIM`` at
construction, else dual. Compiled passes (:mod:`learners.multiview.kernels`)
run batches of rounds; the numpy methods here are the reference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from learners.base import APPEND_BIAS, L2_NORMALIZE, Param
from learners.multiview.contract import TASK_DIMS, MultiviewLearner
from learners.params import non_negative, one_of
from learners.perceptron.multitask import CAVALLANTI2010, is_mistake
from learners.registry import register

__all__ = ["AUTO_PRIMAL_MAX_DIM", "MMPerc", "coregularizer_vector"]

#: ``form="auto"`` uses the primal form up to this many concatenated dimensions D.
AUTO_PRIMAL_MAX_DIM = 400


def coregularizer_vector(phi: np.ndarray, block: slice, K: int, b: float) -> np.ndarray:
    """``z_t = sqrt(bK)(phi_{i_t,t} - phi_t / K)``, so that ``M_t = z_t z_t^T`` (Fig. 3, Eq. 13)."""
    z = phi * (-1.0 / K)
    z[block] += phi[block]
    return z * math.sqrt(b * K)


@register
class MMPerc(MultiviewLearner):
    """MMPERC (cavallanti2010 Sec. 6, Fig. 3): tasks in heterogeneous spaces, one label per round.

    Every round gives all K instances (view ``j`` of dimension ``d_j``, see
    ``task_dims``) and the label of task ``i_t``; the prediction uses the
    second-order matrix ``A_t = A_{s-1} + z_t z_t^T``, whose rank-one terms
    penalise the deviation of task ``i_t``'s margin from the average margin
    (Eq. 13). Mistake-driven. ``form`` chooses the primal (O(D^2) per round)
    or the dual (Sec. 6.1, O(sD + s^2) after s mistakes) implementation
    (docs/algorithms.md Sec. 1.5).

    There is no fixed linear predictor (the current round enters ``A_t``), so
    :meth:`task_weights` is None.
    """

    name = "mmperc"
    summary = "MMPERC: multitask Perceptron for tasks in heterogeneous spaces (multiview rounds)"
    paper = f"{CAVALLANTI2010} (Sec. 6, Fig. 3)"
    params: ClassVar[tuple[Param, ...]] = (
        Param(
            "b",
            1.0,
            "Weight of the margin-deviation co-regulariser (Eq. 13); b = 1 is the paper's "
            "example, b = 0 gives K independent Perceptrons.",
            non_negative,
        ),
        Param(
            "form",
            "auto",
            "primal (A^{-1} kept, O(D^2)/round), dual (Sec. 6.1, O(sD + s^2)/round) or auto "
            f"(primal when D <= {AUTO_PRIMAL_MAX_DIM}).",
            one_of("auto", "primal", "dual"),
        ),
        TASK_DIMS,
        APPEND_BIAS,
        L2_NORMALIZE,
    )
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"form": "dual", "b": 2.0},
        {"form": "primal", "b": 0.5, "append_bias": True, "l2_normalize": True},
    )
    state_fields: ClassVar[tuple[str, ...]] = (
        "dims_",
        "form_",
        "v_",
        "Ainv_",
        "Z_",
        "Q_",
        "a_",
        "n_mistakes_",
    )

    form_: str
    v_: np.ndarray
    Ainv_: np.ndarray
    n_mistakes_: int
    _Z: np.ndarray
    _Q: np.ndarray
    _a: np.ndarray

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """The primal form's D x D inverse and v, D = sum of the task dimensions
        (each with its bias slot); the dual form's buffers at their first capacity
        of 16 mistakes, which grow with the number of mistakes (O(m D + m^2))."""
        listed = params.get("task_dims")  # a list, or an array when read from a snapshot
        given = ([] if listed is None else [int(d) for d in listed])[: int(n_tasks)]
        dims = given + [int(n_features)] * (int(n_tasks) - len(given))
        D = sum(dims) + int(n_tasks)
        form = params.get("form", "auto")
        if form == "primal" or (form == "auto" and D <= AUTO_PRIMAL_MAX_DIM):
            return 8 * (D * D + D + int(n_tasks))
        m = 16
        return 8 * (D + m * D + m * m + m + int(n_tasks))

    # ----------------------------------------------------------- state
    def _init_views_state(self) -> None:
        D = self.total_dim
        form = self.hyper["form"]
        if form == "auto":
            form = "primal" if D <= AUTO_PRIMAL_MAX_DIM else "dual"
        self.form_ = form
        self.v_ = np.zeros(D)
        self.n_mistakes_ = 0
        self.Ainv_ = np.eye(D) if form == "primal" else np.zeros((0, 0))
        self._Z = np.zeros((0, D))
        self._Q = np.zeros((0, 0))
        self._a = np.zeros(0)
        if form == "dual":
            self._allocate(16)

    def _allocate(self, capacity: int) -> None:
        """(Re)allocate the dual buffers with room for ``capacity`` mistakes, keeping s rows."""
        s = self.n_mistakes_
        Z = np.zeros((capacity, self.total_dim))
        Q = np.zeros((capacity, capacity))
        a = np.zeros(capacity)
        Z[:s, : self._Z.shape[1]] = self._Z[:s]
        Q[:s, :s] = self._Q[:s, :s]
        a[:s] = self._a[:s]
        self._Z, self._Q, self._a = Z, Q, a

    def _reserve(self, extra: int) -> None:
        """Make room for ``extra`` more mistakes in the dual buffers."""
        need = self.n_mistakes_ + extra
        if need > self._Z.shape[0]:
            self._allocate(max(need, 2 * self._Z.shape[0]))

    def _get_state(self) -> dict[str, Any]:
        s = self.n_mistakes_
        return {
            "dims_": self.dims_,
            "form_": self.form_,
            "v_": self.v_,
            "Ainv_": self.Ainv_,
            "Z_": self._Z[:s],
            "Q_": self._Q[:s, :s],
            "a_": self._a[:s],
            "n_mistakes_": s,
        }

    def _set_state(self, state: Mapping[str, Any]) -> None:
        missing = set(self.state_fields) - set(state)
        if missing:
            raise ValueError(f"state is missing {sorted(missing)}")
        self.dims_ = np.asarray(state["dims_"], dtype=np.int64).reshape(-1)
        self._refresh_offsets()
        D = self.total_dim
        s = int(state["n_mistakes_"])
        self.form_ = str(state["form_"])
        self.v_ = np.asarray(state["v_"], dtype=np.float64).reshape(D).copy()
        Ainv = np.asarray(state["Ainv_"], dtype=np.float64)
        self.Ainv_ = Ainv.reshape((D, D) if self.form_ == "primal" else (0, 0)).copy()
        self.n_mistakes_ = 0
        self._Z, self._Q, self._a = np.zeros((0, D)), np.zeros((0, 0)), np.zeros(0)
        if self.form_ == "dual":
            self._allocate(max(16, s))
            self._Z[:s] = np.asarray(state["Z_"], dtype=np.float64).reshape(s, D)
            self._Q[:s, :s] = np.asarray(state["Q_"], dtype=np.float64).reshape(s, s)
            self._a[:s] = np.asarray(state["a_"], dtype=np.float64).reshape(s)
        self.n_mistakes_ = s

    def _grow(self, old_total: int) -> None:
        """The new task's block is untouched by every past ``z`` (its view was absent): A grows by I."""
        D = self.total_dim
        self.v_ = np.concatenate([self.v_, np.zeros(D - old_total)])
        if self.form_ == "primal":
            Ainv = np.eye(D)
            Ainv[:old_total, :old_total] = self.Ainv_
            self.Ainv_ = Ainv
        Z = np.zeros((self._Z.shape[0], D))
        Z[:, :old_total] = self._Z
        self._Z = Z

    # ----------------------------------------------------------- mathematics
    def _z(self, phi: np.ndarray, task: int) -> np.ndarray:
        return coregularizer_vector(phi, self.view_slice(task), self._n_tasks, self.hyper["b"])

    def _primal_parts(self, phi: np.ndarray, task: int) -> tuple[float, np.ndarray, float]:
        """(margin, ``c = A^{-1} z``, ``1 + z^T c``) of the round."""
        block = self.view_slice(task)
        z = self._z(phi, task)
        a = self.Ainv_[:, block] @ phi[block]
        c = self.Ainv_ @ z
        denom = 1.0 + float(z @ c)
        margin = float(self.v_ @ a) - float(self.v_ @ c) * float(z @ a) / denom
        return margin, c, denom

    def _dual_parts(
        self, phi: np.ndarray, task: int
    ) -> tuple[float, np.ndarray, np.ndarray, float, np.ndarray, float, float]:
        """(margin, z, u, sigma, g, alpha, gamma) of the round (module docstring)."""
        s = self.n_mistakes_
        block = self.view_slice(task)
        z = self._z(phi, task)
        Z, Q, a = self._Z[:s], self._Q[:s, :s], self._a[:s]
        k = Z @ z
        g = Z[:, block] @ phi[block]
        u = Q @ k
        # the Schur complement of I + [Z z]^T [Z z] is at least 1 in exact arithmetic; on
        # rows of huge values rounding takes it below (to 0 at about 1e9): it is kept at 1
        sigma = 1.0 + float(z @ z) - float(k @ u)
        if sigma < 1.0:
            sigma = 1.0
        alpha = float(self.v_ @ z)
        gamma = float(z[block] @ phi[block])
        own = float(self.v_[block] @ phi[block])
        margin = own - float(a @ (Q @ g)) - (float(a @ u) - alpha) * (float(u @ g) - gamma) / sigma
        return margin, z, u, sigma, g, alpha, gamma

    def _decision_views(self, phi: np.ndarray, task: int) -> float:
        if self.form_ == "primal":
            return self._primal_parts(phi, task)[0]
        return self._dual_parts(phi, task)[0]

    def _learn_views(self, phi: np.ndarray, y: float, task: int) -> None:
        block = self.view_slice(task)
        if self.form_ == "primal":
            margin, c, denom = self._primal_parts(phi, task)
            if not is_mistake(margin, y):
                return
            self.Ainv_ -= np.outer(c, c / denom)
            self.v_[block] += y * phi[block]
            self.n_mistakes_ += 1
            return
        margin, z, u, sigma, g, alpha, gamma = self._dual_parts(phi, task)
        if not is_mistake(margin, y):
            return
        self._reserve(1)
        s = self.n_mistakes_
        Q = self._Q
        Q[:s, :s] += np.outer(u, u / sigma)
        Q[:s, s] = -u / sigma
        Q[s, :s] = Q[:s, s]
        Q[s, s] = 1.0 / sigma
        self._Z[s] = z
        self._a[:s] += y * g
        self._a[s] = alpha + y * gamma
        self.v_[block] += y * phi[block]
        self.n_mistakes_ = s + 1

    def _score_and_learn_rounds(
        self, Phi: np.ndarray, y: np.ndarray, tasks: np.ndarray
    ) -> np.ndarray:
        """Compiled pass (:mod:`learners.multiview.kernels`), equal to the numpy rounds."""
        from learners.multiview import kernels

        scale = math.sqrt(self.hyper["b"] * self._n_tasks)
        if self.form_ == "primal":
            scores, mistakes = kernels.mmperc_primal_pass(
                Phi, y, tasks, self._offsets, scale, self.Ainv_, self.v_
            )
            self.n_mistakes_ += int(mistakes)
            return scores
        self._reserve(Phi.shape[0])
        scores, s = kernels.mmperc_dual_pass(
            Phi,
            y,
            tasks,
            self._offsets,
            scale,
            self._Z,
            self._Q,
            self._a,
            self.v_,
            self.n_mistakes_,
        )
        self.n_mistakes_ = int(s)
        return scores
