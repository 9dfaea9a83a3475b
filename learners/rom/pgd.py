"""ROM-PGD: robust online multitask learning by proximal gradient descent.

zhang2018 Algorithm 1, in the per-event form of docs/algorithms.md Sec. 5 for our
one-task-per-event stream.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from learners.base import APPEND_BIAS, L2_NORMALIZE, Param
from learners.inputs import Vec
from learners.memory_order import interleave_for, memory_order_param
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
from learners.rom.kernels import clear_row, note_support, pgd_pass
from learners.rom.prox import SQNORM_RECOMPUTE_BELOW, shrink_factor
from learners.rom.scaled import add_scaled, rescale, scaled_dense

__all__ = ["RobustPGD", "part_pair"]

#: The state arrays laid out by feature (restored into the learner's own arrays).
_LAID_OUT = ("P_", "Q_")

MEMORY_ORDER = memory_order_param(
    "How the individual and outlier parts lie in memory: 'rows' (each task's p_i and q_i "
    "contiguous: dense rows vectorise), 'features' (p_i[j] and q_i[j] side by side: a sparse "
    "row reads one cache line per non-zero for both)",
    "The numbers are the same bit for bit either way (docs/algorithms.md Sec. 5.2).",
)


def part_pair(n_tasks: int, dim: int, interleave: bool) -> tuple[np.ndarray, np.ndarray]:
    """Zeroed individual and outlier parts ``(P, Q)``, each of logical shape (K, dim): two
    C-ordered arrays, or with ``interleave`` the two halves of one (K, dim, 2) buffer, so
    that ``P[k, j]`` and ``Q[k, j]`` share a cache line (docs/algorithms.md Sec. 5.2)."""
    if not interleave:
        return np.zeros((n_tasks, dim)), np.zeros((n_tasks, dim))
    pair = np.zeros((n_tasks, dim, 2))
    return pair[:, :, 0], pair[:, :, 1]


@register
class RobustPGD(RobustMultitask):
    """ROM-PGD (zhang2018 Algorithm 1): ``w_i = u + p_i + q_i`` by proximal gradient steps.

    On an event ``(x, y)`` of task ``i`` with ``m = K`` tasks, the prediction is
    ``SGN(w_i . x)`` and, with the hinge subgradient ``g = -y x`` (0 when
    ``y w_i . x >= 1``), all evaluated at the current ``w_i``:

    * if the loss is positive (else ``p_i``, ``q_i`` are unchanged, as in
      Algorithm 1):

      - Eq. 7:  ``p_i <- (p_i - eta g) / (1 + beta eta)``;
      - Eq. 8:  ``q_hat = q_i - eta g``;
      - Eq. 10: ``q_i <- max(0, 1 - eta gamma / ||q_hat||) q_hat`` (the minimiser of
        Eq. 9, group soft-thresholding);

    * on every event, Eq. 6: ``u <- (u - (eta/m) g) / (1 + alpha eta / m)``.

    **Per-event form.** The paper's round gives every task one instance and
    updates ``u`` once per round with ``(eta/m) * sum_i g_i`` over all m tasks.
    Our stream gives one task per event, so each event is treated as a round in
    which only the present task has an instance: absent tasks contribute zero
    gradient (their ``p``, ``q`` do not move) and the sum in Eq. 6 has the present
    task's gradient only, keeping the ``eta/m`` and ``alpha eta / m`` factors with
    ``m = K`` (docs/algorithms.md Sec. 5.5). Differences from synchronous rounds: the
    shrink of ``u`` is applied per event, so K events shrink ``u`` by
    ``(1 + alpha eta / K)^-K ~ exp(-alpha eta)`` where one paper round shrinks it by
    ``1 / (1 + alpha eta / m)`` (our ``alpha`` plays the role of the paper's
    ``alpha / m``), and a task sees the ``u`` updated by every earlier event,
    not the ``u`` frozen at the start of the round.

    **Cost.** O(nnz(x)) per event and per prediction: ``u``, each ``p_i`` and
    each ``q_i`` are stored as a scalar times an array (:mod:`learners.rom.scaled`),
    so the shrinks of Eqs. 6, 7 and 10 are scalar multiplications, and
    ``||q_i||^2`` is kept up to date from ``q_i . x`` and ``||x||^2`` so Eq. 10
    needs no pass over ``q_i``. Exceptions: a scale that falls below 1e-100 is
    folded into its array (O(d), rare); a ``q_i`` that Eq. 10 sets to zero is
    cleared only at the entries written since it was last zero (so O(nnz) amortised),
    or wholly (O(d)) when those are more than d/4 or unknown (after a state restore).

    **Outlier tasks.** ``outlier_scores()`` is ``||q_i||_2``. Note
    (docs/algorithms.md Sec. 5.4): from ``q_i = 0`` one step gives ``||q_hat|| =
    eta ||x||``, so ``q_i`` can only leave zero on an event with ``||x|| > gamma``,
    and every later step shrinks it by ``eta gamma`` again: ``q_i`` is either
    always zero (``gamma`` above the input norms) or holds about the last few
    steps, whose norm says little about how far task i is from the others. On
    ``synthetic-rom`` no ``gamma`` singles out the outlier task
    (bench/results/rom_table.md); ``rom-rda``, which accumulates, is the better
    detector.

    Attributes
    ----------
    u_, u_scale_ : ndarray (dim,), float
        Shared part ``u = u_scale_ * u_``.
    P_, p_scale_ : ndarray (K, dim), ndarray (K,)
        Individual parts ``p_i = p_scale_[i] * P_[i]``.
    Q_, q_scale_, q_sqnorm_ : ndarray (K, dim), ndarray (K,), ndarray (K,)
        Outlier parts ``q_i = q_scale_[i] * Q_[i]`` and ``||q_i||^2``.
    n_updates_ : int
        Events with a positive hinge loss.
    """

    name = "rom-pgd"
    summary = "ROM-PGD: shared + individual + group-lasso outlier parts, proximal gradient"
    paper = f"{ZHANG2018} (Algorithm 1, Eqs. 6-10)"
    params = (
        Param(
            "eta",
            0.1,
            "Learning rate eta (Eqs. 6-8). Per-instance reading of a paper round (the one that "
            "matches an independent reference, docs/algorithms.md Sec. 5.5): every event is a "
            "round in which only its task has an instance, so u steps and shrinks on every "
            "event with eta/m (m = K tasks), p_i and q_i with eta on their task's events.",
            positive,
        ),
        Param("alpha", 1e-3, "Ridge weight alpha on the shared part u (Eq. 6).", non_negative),
        Param("beta", 1e-3, "Ridge weight beta on the individual parts p_i (Eq. 7).", non_negative),
        Param("gamma", 0.5, "Group-lasso weight gamma on the columns q_i (Eq. 10).", non_negative),
        *OUTLIER_PARAMS,
        OUTLIER_MIN_SHARE,
        APPEND_BIAS,
        L2_NORMALIZE,
        MEMORY_ORDER,
    )
    conformance_params = (
        {},
        {"gamma": 0.0, "alpha": 0.0, "beta": 0.0},
        {"gamma": 5.0, "alpha": 10.0, "eta": 0.5, "append_bias": True, "l2_normalize": True},
        {"gamma": 0.05, "memory_order": "features"},
    )
    state_fields = (
        "u_",
        "u_scale_",
        "P_",
        "p_scale_",
        "Q_",
        "q_scale_",
        "q_sqnorm_",
        "n_updates_",
    )

    def _init_state(self) -> None:
        K, d = self.n_tasks, self.dim
        self.u_ = np.zeros(d)
        self.u_scale_ = 1.0
        self.P_, self.Q_ = part_pair(K, d, self.interleaved)
        self.p_scale_ = np.ones(K)
        self.q_scale_ = np.ones(K)
        self.q_sqnorm_ = np.zeros(K)
        self.n_updates_ = 0
        # Where each Q_[k] may be non-zero (entries written since it was last zero), while
        # that is at most dim // 4 entries; count -1: unknown (clear the whole row).
        self._q_support_idx = np.zeros((K, d // 4), dtype=np.int64)
        self._q_support_n = np.zeros(K, dtype=np.int64)

    @property
    def interleaved(self) -> bool:
        """Whether ``P_`` and ``Q_`` are laid out by feature (:func:`part_pair`)."""
        return interleave_for(self.dim, self.hyper["memory_order"])

    def _in_place_fields(self) -> Collection[str]:
        """``P_`` and ``Q_`` are restored into the arrays :meth:`_init_state` allocated, so a
        restored learner keeps their memory order."""
        return _LAID_OUT

    def _parts(self, x: Vec, task: int) -> tuple[float, float, float]:
        """``(u.x, p_i.x, q_i.x)``, O(nnz), summed as the kernel sums them."""
        return (
            self.u_scale_ * vec_dot(x, self.u_),
            float(self.p_scale_[task]) * vec_dot(x, self.P_[task]),
            float(self.q_scale_[task]) * vec_dot(x, self.Q_[task]),
        )

    def _decision(self, x: Vec, task: int) -> float:
        ux, px, qx = self._parts(x, task)
        return ux + px + qx

    def _kernel(
        self, rows: KernelRows, y: np.ndarray, tasks: np.ndarray, scores: np.ndarray
    ) -> None:
        """The compiled pass (:func:`learners.rom.kernels.pgd_pass`)."""
        h = self.hyper
        u_scale = np.array([self.u_scale_])
        counts = np.array([self.n_updates_], dtype=np.int64)
        hyper = np.array([h["eta"], h["alpha"], h["beta"], h["gamma"], float(self.n_tasks)])
        pgd_pass(
            rows, y, tasks, self.u_, self.P_, self.Q_, u_scale, self.p_scale_, self.q_scale_,
            self.q_sqnorm_, self._q_support_idx, self._q_support_n, hyper, counts, scores,
        )  # fmt: skip
        self.u_scale_, self.n_updates_ = float(u_scale[0]), int(counts[0])

    def _learn_reference(self, x: Vec, y: float, task: int) -> None:
        """The numpy round of Algorithm 1, the reference of the kernel."""
        eta, m = self.hyper["eta"], self.n_tasks
        ux, px, qx = self._parts(x, task)
        if hinge_active(ux + px + qx, y):
            # g = -y x, so "- eta g" adds eta * y * x.
            self.n_updates_ += 1
            self._step_individual(x, y * eta, task)
            self._step_outlier(x, y * eta, qx, task)
            add_scaled(x, self.u_, self.u_scale_, y * eta / m)
        self.u_scale_ = rescale(self.u_, self.u_scale_, 1.0 / (1.0 + self.hyper["alpha"] * eta / m))

    def _step_individual(self, x: Vec, step: float, task: int) -> None:
        """Eq. 7: ``p_i <- (p_i + step x) / (1 + beta eta)`` with ``step = eta y``."""
        add_scaled(x, self.P_[task], float(self.p_scale_[task]), step)
        shrink = 1.0 / (1.0 + self.hyper["beta"] * self.hyper["eta"])
        self.p_scale_[task] = rescale(self.P_[task], float(self.p_scale_[task]), shrink)

    def _step_outlier(self, x: Vec, step: float, qx: float, task: int) -> None:
        """Eqs. 8 and 10: ``q_hat = q_i + step x``, then group soft-thresholding at eta gamma."""
        sq_x = x.sqnorm()
        stepped = False
        if self.q_sqnorm_[task] == 0.0:  # q_i = 0: q_hat = step x exactly
            norm_hat = abs(step) * float(np.sqrt(sq_x))
        else:
            old, sq_step = float(self.q_sqnorm_[task]), step * step * sq_x
            sq = old + 2.0 * step * qx + sq_step
            if sq < SQNORM_RECOMPUTE_BELOW * (old + sq_step):
                # cancellation: take the step (Eq. 8) and sum the stored q_hat again
                self._step_q(x, step, task)
                q_hat = float(self.q_scale_[task]) * self.Q_[task]
                sq, stepped = float(q_hat @ q_hat), True
            norm_hat = float(np.sqrt(max(sq, 0.0)))
        factor = shrink_factor(norm_hat, self.hyper["eta"] * self.hyper["gamma"])
        if factor == 0.0:
            if self.q_sqnorm_[task] > 0.0:
                clear_row(self.Q_, task, self._q_support_idx, self._q_support_n)
            self.q_scale_[task] = 1.0
            self.q_sqnorm_[task] = 0.0
            return
        if not stepped:
            self._step_q(x, step, task)
        self.q_scale_[task] = rescale(self.Q_[task], float(self.q_scale_[task]), factor)
        self.q_sqnorm_[task] = (factor * norm_hat) ** 2

    def _step_q(self, x: Vec, step: float, task: int) -> None:
        """Eq. 8 on the stored ``q_i``: ``q_hat = q_i + step x``, its entries remembered."""
        add_scaled(x, self.Q_[task], float(self.q_scale_[task]), step)
        note_support(x.idx, x.nnz, task, self._q_support_idx, self._q_support_n)

    def _set_state(self, state: Any) -> None:
        super()._set_state(state)
        self._q_support_idx = np.zeros((self.n_tasks, self.dim // 4), dtype=np.int64)
        self._q_support_n = np.full(self.n_tasks, -1, dtype=np.int64)  # unknown: whole rows

    def _add_task(self) -> None:
        d, K = self.dim, self.n_tasks
        P, Q = part_pair(K + 1, d, self.interleaved)
        P[:K] = self.P_
        Q[:K] = self.Q_
        self.P_, self.Q_ = P, Q
        self.p_scale_ = np.append(self.p_scale_, 1.0)
        self.q_scale_ = np.append(self.q_scale_, 1.0)
        self.q_sqnorm_ = np.append(self.q_sqnorm_, 0.0)
        self._q_support_idx = np.vstack([self._q_support_idx, np.zeros((1, d // 4), np.int64)])
        self._q_support_n = np.append(self._q_support_n, 0)

    def shared_weights(self) -> np.ndarray:
        """The shared part ``u``, shape ``(dim,)``."""
        return scaled_dense(self.u_, self.u_scale_)

    def individual_weights(self) -> np.ndarray:
        """The individual parts ``p_i`` as rows, shape ``(K, dim)``."""
        return scaled_dense(self.P_, self.p_scale_)

    def outlier_weights(self) -> np.ndarray:
        """The outlier parts ``q_i`` as rows, shape ``(K, dim)``."""
        return scaled_dense(self.Q_, self.q_scale_)

    def _task_weights(self) -> np.ndarray:
        return self.shared_weights() + self.individual_weights() + self.outlier_weights()

    def _outlier_norms(self) -> np.ndarray:
        return np.asarray(np.linalg.norm(self.outlier_weights(), axis=1))
