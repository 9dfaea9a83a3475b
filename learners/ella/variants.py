"""The registered ELLA-family learners: one basis step each (ruvolo2014; docs/algorithms.md Sec. 4).

All share :class:`~learners.ella.model.BasisLearner` (statistics, refresh schedule,
Lasso codes, accumulators); they differ only in what a refresh of task ``t`` does
to the basis after ``s_t`` was recomputed.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import Param
from learners.ella.lasso import sparse_code
from learners.ella.model import (
    COMMON_PARAMS,
    RUVOLO2013,
    RUVOLO2014,
    BasisLearner,
)
from learners.params import non_negative, one_of, positive_int
from learners.registry import register

__all__ = ["Ella", "EllaDual", "EllaIncremental", "EllaSvd", "MtlSvd"]


@register
class Ella(BasisLearner):
    """ELLA (Ruvolo & Eaton 2013): after each refresh, ``L`` is the exact minimiser of
    ``lam ||L||_F^2 + (1/T) sum_t ||theta_t - L s_t||^2_{D_t}`` given the codes.

    >>> import numpy as np, learners
    >>> model = learners.make("ella", n_features=2, n_tasks=2, k=2, refresh_every=2)
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> model.learn_many(X, np.array([2.0, -1.0]), 0)
    >>> round(model.predict_one(np.array([1.0, 0.0]), 0), 1)
    2.0

    ``ridge_form='icml'`` gives the ICML / MATLAB form of the base learner
    (docs/algorithms.md Sec. 8 #12): ``lam`` acts on ``||L||_F`` only and the small
    ``ridge`` of the single-task fit enters ``D_t`` divided by ``n_t``, bias free.
    It is not the default: on linearly separable classification streams its
    ``ridge / (2 n_t)`` lets the logistic fit run off (``D_t`` -> 0) and the codes
    carry no information (the conformance stream ends at a 0.50 mistake rate).
    """

    name: ClassVar[str] = "ella"
    summary: ClassVar[str] = "ELLA: shared basis, sparse codes, exact L step per new batch."
    paper: ClassVar[str] = RUVOLO2013
    conformance_params: ClassVar[tuple[dict[str, object], ...]] = (
        *BasisLearner.conformance_params,
        {"k": 4, "ridge_form": "icml"},
    )

    def _update_basis(self, task: int) -> None:
        self._ella_step()


@register
class EllaIncremental(BasisLearner):
    """ELLA Incremental (ruvolo2014 Extensions): each column of ``L`` used by ``s_t`` is set
    once to its minimiser of ELLA's basis objective, the others fixed (block Gauss-Seidel)."""

    name: ClassVar[str] = "ella-incremental"
    summary: ClassVar[str] = "ELLA with one column-wise (incremental) update of the used atoms."
    paper: ClassVar[str] = RUVOLO2014

    def _update_basis(self, task: int) -> None:
        self._incremental_step(task)


@register
class EllaSvd(BasisLearner):
    """ELLA-SVD (ruvolo2014): a GSVD step (Eqs. 8-10) for each atom used by ``s_t``, which
    also revises that atom's entry in the codes of every task using it."""

    name: ClassVar[str] = "ella-svd"
    uses_accumulators: ClassVar[bool] = False
    summary: ClassVar[str] = "ELLA-SVD: K-SVD-style GSVD update of the atoms the new task uses."
    paper: ClassVar[str] = RUVOLO2014

    def _update_basis(self, task: int) -> None:
        self._svd_step(task)


@register
class EllaDual(BasisLearner):
    """ELLA Dual Update (ruvolo2014): the ELLA-SVD step, undone when it worsens Eq. (7),
    then the ELLA Incremental step.

    The keep rule's penalty is ``keep_rule`` (docs/algorithms.md Sec. 4.8 and Sec. 8 #13):
    ``"l1"`` (default) ``mu ||s||_1``, the objective the Lasso codes minimise;
    ``"l0"`` ``mu ||s||_0``, Eq. (7) as printed (paper-literal).

    ``svd_kept_`` and ``svd_undone_`` count how often the SVD step was kept or undone.
    """

    name: ClassVar[str] = "ella-dual"
    summary: ClassVar[str] = (
        "ELLA Dual Update: ELLA-SVD step (kept if Eq. 7 improves) + Incremental."
    )
    paper: ClassVar[str] = RUVOLO2014
    state_fields: ClassVar[tuple[str, ...]] = (
        *BasisLearner.state_fields,
        "svd_kept_",
        "svd_undone_",
    )
    params: ClassVar[tuple[Param, ...]] = (
        *COMMON_PARAMS,
        Param(
            "keep_rule",
            "l1",
            "Penalty of the Eq. (7) test that keeps or undoes the ELLA-SVD step: 'l1' (default) "
            "mu ||s||_1, the L1 problem the Lasso codes (Eq. 11) and the GSVD step both descend, "
            "so the test compares like with like; 'l0' mu ||s||_0, Eq. (7) as printed "
            "(paper-literal), which only counts non-zero code entries.",
            one_of("l1", "l0"),
        ),
    )
    conformance_params: ClassVar[tuple[dict[str, object], ...]] = (
        *BasisLearner.conformance_params,
        {"k": 4, "keep_rule": "l0"},
    )

    def _init_state(self) -> None:
        super()._init_state()
        self.svd_kept_ = 0
        self.svd_undone_ = 0

    def _update_basis(self, task: int) -> None:
        saved = (self.L_.copy(), self.S_.copy(), self.A_.copy(), self.b_.copy())
        penalty = str(self.hyper["keep_rule"])
        before = self.objective(penalty)
        self._svd_step(task)
        if self.objective(penalty) > before:
            self.L_, self.S_, self.A_, self.b_ = saved
            self.svd_undone_ += 1
        else:
            self.svd_kept_ += 1
        self._incremental_step(task)


@register
class MtlSvd(BasisLearner):
    """MTL-SVD (ruvolo2014 Algorithm 2), the batch method: each refresh reruns alternating
    sweeps (all codes by Eq. 11, then every atom by the GSVD step) over all tasks
    until Eq. (7) improves by less than ``tol`` (relative) or ``sweeps`` are done."""

    name: ClassVar[str] = "mtl-svd"
    uses_accumulators: ClassVar[bool] = False
    summary: ClassVar[str] = "MTL-SVD: batch K-SVD-style multitask learning, rerun on each refresh."
    paper: ClassVar[str] = RUVOLO2014
    conformance_params: ClassVar[tuple[dict[str, object], ...]] = (
        {"k": 4, "sweeps": 3},
        {"k": 4, "base_learner": "logistic", "sweeps": 3},
    )
    params: ClassVar[tuple[Param, ...]] = (
        *COMMON_PARAMS,
        Param("sweeps", 20, "Maximum alternating sweeps per refresh.", positive_int),
        Param("tol", 1e-4, "Stop when Eq. (7) improves by less than this fraction.", non_negative),
    )

    def _update_basis(self, task: int) -> None:
        previous = self.objective()
        for _ in range(int(self.hyper["sweeps"])):
            for u in np.flatnonzero(self.used_).tolist():
                code = sparse_code(self.L_, self.D_[u], self.theta_[u], self.hyper["mu"])
                self._set_code(u, code)
            for j in range(self.k):
                self._gsvd_atom(j)
            current = self.objective()
            if previous - current <= self.hyper["tol"] * abs(previous):
                break
            previous = current
