"""COML: collaborative online multitask learning (Li, Hoi, Chang, Liu, Jain; TKDE 2014).

A **reconstruction** ([R], docs/algorithms.md Sec. 5.6): the paper's body was not
retrievable. What zhang2018 says of it ("constructs a global center for all
tasks, and on each round the global model is leveraged by each individual task
to form its collaborative updating rule") is realised as a global PA-I model
plus per-task PA-I steps pulled towards it. Do not read its figures as the
paper's.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from learners.base import APPEND_BIAS, L2_NORMALIZE, Param
from learners.inputs import Vec
from learners.memory_order import interleave_for, memory_order_param
from learners.omtl.compiled import CompiledLearner, KernelRows, vec_dot
from learners.params import non_negative, positive
from learners.registry import register
from learners.rom.kernels import coml_pass
from learners.rom.scaled import add_scaled, rescale

__all__ = ["CollaborativeMultitask", "task_parts"]

LI2014 = (
    "Li, Hoi, Chang, Liu, Jain. Collaborative Online Multitask Learning. IEEE TKDE 26(8), 2014 "
    "(reconstruction, docs/algorithms.md Sec. 5.6 [R])"
)


MEMORY_ORDER = memory_order_param(
    "How the tasks' vectors V_k lie in memory: 'rows' (each V_k contiguous: dense rows "
    "vectorise), 'features' (the K values of feature j side by side: the global step's K "
    "updates of a sparse row run as one pass, one cache line per non-zero)",
    "The numbers are the same bit for bit either way (docs/algorithms.md Sec. 5.6).",
)


def task_parts(n_tasks: int, dim: int, by_feature: bool) -> np.ndarray:
    """Zeroed task vectors ``V`` of logical shape (K, dim): C-ordered, or ``by_feature``
    the transpose of a C-ordered (dim, K) buffer, so that ``V[:, j]`` is contiguous."""
    if by_feature:
        return np.zeros((dim, n_tasks)).T
    return np.zeros((n_tasks, dim))


@register
class CollaborativeMultitask(CompiledLearner):
    """COML [R]: per-task PA-I models pulled towards a global PA-I model.

    On an event ``(x, y)`` of task ``k`` (hinge loss ``l(w) = [1 - y w.x]_+``):

    1. global model, PA-I on every event:
       ``u <- u + min(C, l(u)/||x||^2) y x``;
    2. task k, ``w_k <- argmin_w 1/2 ||w - w_k||^2 + nu/2 ||w - u||^2 + C l(w)``,
       whose solution (docs/algorithms.md Sec. 5.6, derived) is, with
       ``c = (w_k + nu u)/(1 + nu)``:
       ``w_k <- c + tau y x / (1 + nu)``, ``tau = min(C, (1 + nu) l(c)/||x||^2)``.

    Task k predicts with ``w_k``. With ``nu = 0`` the tasks are independent PA-I
    learners. Step 2 uses the global model after step 1. The step counts as a
    reconstruction: the original's exact rule (and zhang2018's COML-1/COML-2
    split) is unknown.

    **Cost.** O(K nnz(x)) per event, O(nnz(x)) per prediction: each task is
    stored as ``w_k = b_k u + s_k V_k``; the pull of step 2 only changes the
    scalars ``b_k`` and ``s_k``, and a change ``delta`` of ``u`` is cancelled in
    the other tasks by ``V_j -= (b_j / s_j) delta`` (sparse, for every j). On wide
    rows (``memory_order``) V is laid out by feature, so those K updates of a sparse
    row are one pass over its non-zeros.

    ``relation_matrix()`` is None: the tasks relate only through ``u``.

    Attributes
    ----------
    u_ : ndarray, shape (dim,)
        The global model.
    V_, v_scale_, b_ : ndarray (K, dim), ndarray (K,), ndarray (K,)
        ``w_k = b_[k] * u_ + v_scale_[k] * V_[k]``.
    """

    name = "coml"
    summary = "COML [R]: per-task PA-I learners pulled towards a global PA-I model"
    paper = LI2014
    params = (
        Param("C", 1.0, "PA-I aggressiveness C (caps the step size tau).", positive),
        Param(
            "nu",
            1.0,
            "Pull nu of each task towards the global model; 0 gives independent PA-I.",
            non_negative,
        ),
        APPEND_BIAS,
        L2_NORMALIZE,
        MEMORY_ORDER,
    )
    conformance_params = (
        {},
        {"nu": 0.0},
        {"nu": 10.0, "C": 0.1, "append_bias": True, "l2_normalize": True},
        {"nu": 0.5, "memory_order": "features"},
    )
    state_fields = ("u_", "V_", "v_scale_", "b_")

    def _init_state(self) -> None:
        self.u_ = np.zeros(self.dim)
        self.V_ = task_parts(self.n_tasks, self.dim, self.by_feature)
        self.v_scale_ = np.ones(self.n_tasks)
        self.b_ = np.zeros(self.n_tasks)

    @property
    def by_feature(self) -> bool:
        """Whether ``V_`` is laid out by feature (:func:`task_parts`)."""
        return interleave_for(self.dim, self.hyper["memory_order"])

    def _in_place_fields(self) -> Collection[str]:
        """``V_`` is restored into the array :meth:`_init_state` allocated, so a restored
        learner keeps its memory order."""
        return ("V_",)

    def _decision(self, x: Vec, task: int) -> float:
        return float(self.b_[task]) * vec_dot(x, self.u_) + float(self.v_scale_[task]) * vec_dot(
            x, self.V_[task]
        )

    def _kernel(
        self, rows: KernelRows, y: np.ndarray, tasks: np.ndarray, scores: np.ndarray
    ) -> None:
        """The compiled pass (:func:`learners.rom.kernels.coml_pass`)."""
        C, nu = float(self.hyper["C"]), float(self.hyper["nu"])
        coml_pass(rows, y, tasks, self.u_, self.V_, self.v_scale_, self.b_, C, nu, scores)

    def _learn_reference(self, x: Vec, y: float, task: int) -> None:
        """The numpy event (steps 1 and 2 above), the reference of the kernel."""
        sq = x.sqnorm()
        if sq == 0.0:
            return  # x = 0: every step leaves w.x = 0; nothing to learn
        C, nu = self.hyper["C"], self.hyper["nu"]
        # 1. global PA-I step; the tasks' own vectors absorb -b_j * delta.
        loss_u = max(0.0, 1.0 - y * vec_dot(x, self.u_))
        if loss_u > 0.0:
            step = min(C, loss_u / sq) * y
            x.add_to(self.u_, step)
            x.add_outer(self.V_, -step * self.b_ / self.v_scale_)
        # 2. pull task k towards u (c = (w_k + nu u)/(1 + nu)), then its PA-I step.
        self.b_[task] = (self.b_[task] + nu) / (1.0 + nu)
        self.v_scale_[task] = rescale(self.V_[task], float(self.v_scale_[task]), 1.0 / (1.0 + nu))
        loss_c = max(0.0, 1.0 - y * self._decision(x, task))
        if loss_c > 0.0:
            tau = min(C, (1.0 + nu) * loss_c / sq)
            add_scaled(x, self.V_[task], float(self.v_scale_[task]), tau * y / (1.0 + nu))

    def _add_task(self) -> None:
        V = task_parts(self.n_tasks + 1, self.dim, self.by_feature)
        V[: self.n_tasks] = self.V_
        self.V_ = V
        self.v_scale_ = np.append(self.v_scale_, 1.0)
        self.b_ = np.append(self.b_, 0.0)

    def _task_weights(self) -> np.ndarray:
        return self.b_[:, None] * self.u_[None, :] + self.v_scale_[:, None] * self.V_
