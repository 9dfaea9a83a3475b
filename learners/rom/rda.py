"""ROM-RDA: robust online multitask learning by regularized dual averaging.

zhang2018 Algorithm 2 in the unnormalised-sum form of docs/algorithms.md Sec. 5.3,
adapted to our one-task-per-event stream.
"""

from __future__ import annotations

import numpy as np

from learners.base import APPEND_BIAS, L2_NORMALIZE, Param
from learners.inputs import Vec
from learners.omtl.compiled import KernelRows, vec_dot
from learners.params import non_negative, positive
from learners.registry import register
from learners.rom.base import (
    OUTLIER_MIN_SHARE,
    OUTLIER_PARAMS,
    ZHANG2018,
    RobustMultitask,
    hinge_active,
)
from learners.rom.kernels import rda_pass
from learners.rom.prox import SQNORM_RECOMPUTE_BELOW, shrink_factor

__all__ = ["RobustRDA"]


@register
class RobustRDA(RobustMultitask):
    """ROM-RDA (zhang2018 Algorithm 2): ``w_i = u + p_i + q_i`` from averaged subgradients.

    The three blocks share one hinge subgradient per event (``g = -y x`` when
    ``y w_i . x < 1``, else 0; docs/algorithms.md Sec. 5.1), so the dual averages of
    Eqs. 15 and 16 coincide, ``g_bar_p^i = g_bar_q^i``. We keep the unnormalised
    sums (``g_bar = G / t``): ``G_u = sum of all g`` (Eq. 14) and ``G_i = sum of
    task i's g`` (Eqs. 15, 16), and compute the closed forms with
    ``theta_t = kappa sqrt(t)``:

    * Eq. 20: ``u   = -G_u / (t alpha + theta_t)``;
    * Eq. 21: ``p_i = -G_i / (t beta + theta_t)``;
    * Eq. 22: ``q_i = -(1/theta_t) max(0, 1 - gamma t / ||G_i||) G_i``.

    **Per-event form and the time index.** The paper's round t gives every
    task one instance; here each event carries one task. An event is taken to be
    ``1/K`` of a round: the round clock ``t`` advances by ``1/K`` per event (K at
    the time of the event), whatever the task, and absent tasks contribute zero
    gradient. So in a stream that cycles through the K tasks, after every K
    events ``t``, ``G_u`` and ``G_i`` equal the paper's after the same number of
    rounds, and the hyperparameters keep the paper's scale (with ``t`` counting
    events instead, ``alpha, beta, gamma`` would be K times smaller and ``kappa``
    sqrt(K) times smaller for the same model). Consequences, which differ from
    the paper's synchronous rounds:

    * **absent tasks shrink:** between two events of task i its ``G_i`` is fixed
      but ``t`` grows, so ``p_i`` decays like ``1/(t beta + theta_t)`` and ``q_i``
      is zeroed once ``gamma t >= ||G_i||`` (in the paper every task gets a
      zero-or-not gradient every round, which has the same effect when its
      loss is zero);
    * within a round the paper updates ``u`` once, after all tasks; here ``u``
      (like ``p``, ``q``) is re-evaluated at every event from the current sums.
    * Before the first event (``t = 0``) every weight is zero.

    **Cost.** O(nnz(x)) per event and per prediction: the weights are never
    stored, only ``G_u``, ``G``, ``||G_i||^2`` (kept up to date from ``G_i . x``)
    and ``t``; the decision is three dot products and scalar arithmetic.

    **Outlier tasks.** ``||q_i|| = max(0, ||G_i|| - gamma t) / theta_t``: task i
    is flagged while the norm of its averaged subgradient ``||G_i|| / t`` exceeds
    ``gamma``. Since the averages accumulate, this is the more meaningful
    detector of the two ROM variants (docs/algorithms.md Sec. 5.4). The averaged
    subgradient also carries the noise of the summed inputs, of order
    ``sqrt(updates_i) * ||x|| / t``, so ``gamma`` must sit above that floor for
    the related tasks to keep ``q_i = 0``.
    When ``gamma`` is set for error instead (below that floor), every ``q_i`` is
    non-zero and the outlier's column is only larger than the others';
    ``outlier_rule="relative"`` (:func:`learners.rom.base.relative_outliers`)
    flags a column that stands out from the others' mean.

    Attributes
    ----------
    Gu_ : ndarray, shape (dim,)
        Sum of all subgradients (Eq. 14 times t).
    G_ : ndarray, shape (K, dim)
        Per-task sums of subgradients (Eqs. 15, 16 times t).
    G_sqnorm_ : ndarray, shape (K,)
        ``||G_i||^2``.
    t_ : float
        The round clock (events / K).
    n_updates_ : int
        Events with a positive hinge loss.
    """

    name = "rom-rda"
    summary = "ROM-RDA: shared + individual + group-lasso outlier parts, regularized dual averaging"
    paper = f"{ZHANG2018} (Algorithm 2, Eqs. 14-22)"
    params = (
        Param(
            "kappa",
            1.0,
            "theta_t = kappa * sqrt(t) (Theorem 6). Per-instance reading of a paper round (the "
            "one that matches an independent reference, docs/algorithms.md Sec. 5.5): the round "
            "clock t advances 1/m per event (m = K tasks), so K events are one paper round and "
            "alpha, beta, gamma, kappa keep the paper's scale.",
            positive,
        ),
        Param("alpha", 1e-3, "Ridge weight alpha on the shared part u (Eq. 20).", non_negative),
        Param(
            "beta", 1e-3, "Ridge weight beta on the individual parts p_i (Eq. 21).", non_negative
        ),
        Param(
            "gamma",
            0.1,
            "Group-lasso weight gamma: q_i = 0 while ||average subgradient|| <= gamma (Eq. 22).",
            non_negative,
        ),
        *OUTLIER_PARAMS,
        OUTLIER_MIN_SHARE,
        APPEND_BIAS,
        L2_NORMALIZE,
    )
    conformance_params = (
        {},
        {"gamma": 0.0, "alpha": 0.0, "beta": 0.0, "kappa": 0.1},
        {
            "gamma": 1.0,
            "alpha": 1.0,
            "kappa": 10.0,
            "append_bias": True,
            "l2_normalize": True,
            "outlier_rule": "relative",
        },
    )
    state_fields = ("Gu_", "G_", "G_sqnorm_", "t_", "n_updates_")

    def _init_state(self) -> None:
        self.Gu_ = np.zeros(self.dim)
        self.G_ = np.zeros((self.n_tasks, self.dim))
        self.G_sqnorm_ = np.zeros(self.n_tasks)
        self.t_ = 0.0
        self.n_updates_ = 0

    def _coefficients(self, task: int) -> tuple[float, float, float]:
        """``(a_u, a_p, a_q)`` with ``u = -a_u G_u``, ``p_i = -a_p G_i``, ``q_i = -a_q G_i``."""
        t = self.t_
        if t <= 0.0:
            return 0.0, 0.0, 0.0
        theta = self.hyper["kappa"] * np.sqrt(t)
        a_u = 1.0 / (t * self.hyper["alpha"] + theta)  # Eq. 20
        a_p = 1.0 / (t * self.hyper["beta"] + theta)  # Eq. 21
        norm = float(np.sqrt(self.G_sqnorm_[task]))
        a_q = shrink_factor(norm, self.hyper["gamma"] * t) / theta  # Eq. 22
        return float(a_u), float(a_p), float(a_q)

    def _decision(self, x: Vec, task: int) -> float:
        a_u, a_p, a_q = self._coefficients(task)
        return -(a_u * vec_dot(x, self.Gu_) + (a_p + a_q) * vec_dot(x, self.G_[task]))

    def _kernel(
        self, rows: KernelRows, y: np.ndarray, tasks: np.ndarray, scores: np.ndarray
    ) -> None:
        """The compiled pass (:func:`learners.rom.kernels.rda_pass`)."""
        h = self.hyper
        clock = np.array([self.t_])
        counts = np.array([self.n_updates_], dtype=np.int64)
        hyper = np.array([h["kappa"], h["alpha"], h["beta"], h["gamma"], float(self.n_tasks)])
        rda_pass(rows, y, tasks, self.Gu_, self.G_, self.G_sqnorm_, clock, hyper, counts, scores)
        self.t_, self.n_updates_ = float(clock[0]), int(counts[0])

    def _learn_reference(self, x: Vec, y: float, task: int) -> None:
        """The numpy round (Eqs. 14-22), the reference of the kernel."""
        if hinge_active(self._decision(x, task), y):
            # g = -y x enters G_u (Eq. 14) and G_i (Eqs. 15, 16).
            gx = x.dot(self.G_[task])
            old, sq_x = float(self.G_sqnorm_[task]), x.sqnorm()
            sqnorm = old - 2.0 * y * gx + sq_x
            x.add_to(self.Gu_, -y)
            x.add_to(self.G_[task], -y)
            if sqnorm < SQNORM_RECOMPUTE_BELOW * (old + sq_x):  # cancellation
                sqnorm = float(self.G_[task] @ self.G_[task])
            self.G_sqnorm_[task] = max(sqnorm, 0.0)
            self.n_updates_ += 1
        self.t_ += 1.0 / self.n_tasks

    def _add_task(self) -> None:
        self.G_ = np.vstack([self.G_, np.zeros((1, self.dim))])
        self.G_sqnorm_ = np.append(self.G_sqnorm_, 0.0)

    def _all_coefficients(self) -> tuple[float, np.ndarray, np.ndarray]:
        """:meth:`_coefficients` for every task: ``(a_u, a_p, a_q)`` with arrays ``(K,)``."""
        K = self.n_tasks
        per_task = [self._coefficients(k) for k in range(K)]
        a_u = per_task[0][0] if K else 0.0
        a_p = np.array([c[1] for c in per_task])
        a_q = np.array([c[2] for c in per_task])
        return a_u, a_p, a_q

    def shared_weights(self) -> np.ndarray:
        """The shared part ``u`` (Eq. 20), shape ``(dim,)``."""
        a_u, _, _ = self._all_coefficients()
        return -a_u * self.Gu_

    def individual_weights(self) -> np.ndarray:
        """The individual parts ``p_i`` (Eq. 21) as rows, shape ``(K, dim)``."""
        _, a_p, _ = self._all_coefficients()
        return -a_p[:, None] * self.G_

    def outlier_weights(self) -> np.ndarray:
        """The outlier parts ``q_i`` (Eq. 22) as rows, shape ``(K, dim)``."""
        _, _, a_q = self._all_coefficients()
        return -a_q[:, None] * self.G_

    def _task_weights(self) -> np.ndarray:
        a_u, a_p, a_q = self._all_coefficients()
        return -a_u * self.Gu_[None, :] - (a_p + a_q)[:, None] * self.G_

    def _outlier_norms(self) -> np.ndarray:
        return np.asarray(np.linalg.norm(self.outlier_weights(), axis=1))
