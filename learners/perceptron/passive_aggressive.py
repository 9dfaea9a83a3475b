"""Passive-Aggressive baselines of zhang2018 (Table I): PA-individual and PA-global.

Crammer, Dekel, Keshet, Shalev-Shwartz & Singer (2006), in the conventions of
LIBOL's ``PA.m``, ``PA1.m``, ``PA2.m`` (docs/algorithms.md Sec. 5.6): with
``f = w^T x`` and the hinge loss ``l = max(0, 1 - y f)``, when ``l > 0`` the
weights move by ``w <- w + tau y x`` with

* PA (Crammer et al. Eq. 7):     ``tau = l / ||x||^2``
* PA-I (Eq. 8):                  ``tau = min(C, l / ||x||^2)``
* PA-II (Eq. 9):                 ``tau = l / (||x||^2 + 1 / (2C))``

The prediction is ``+1`` iff ``f >= 0``. A zero vector (``||x|| = 0``) cannot
change ``w`` whatever ``tau`` is, so it is skipped (LIBOL's ``tau = 1`` there
has no effect either). ROM does not say which variant it ran, so the default is
PA-I with LIBOL's ``C = 1`` [A].

These classes are the numpy reference; the registered ``pa-individual`` and
``pa-global`` of :mod:`learners.perceptron.linear` run the same steps on the
compiled kernel of :mod:`learners.perceptron.kernels`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from learners.base import APPEND_BIAS, L2_NORMALIZE, Learner, Param
from learners.inputs import Vec
from learners.params import one_of, positive

__all__ = [
    "PassiveAggressive",
    "PassiveAggressiveGlobalReference",
    "PassiveAggressiveIndividualReference",
    "step_size",
]

CRAMMER2006 = (
    "Crammer, Dekel, Keshet, Shalev-Shwartz, Singer. Online Passive-Aggressive Algorithms. "
    "JMLR 7, 2006"
)
ZHANG2018 = "Zhang, Zhao, Hao, Soh, Lee. ROM: A Robust Online Multi-Task Learning Approach. 2018"


def step_size(variant: str, loss: float, sqnorm: float, C: float) -> float:
    """The step ``tau`` of PA / PA-I / PA-II (Crammer et al. 2006, Eqs. 7-9) for ``loss > 0``."""
    if variant == "pa":
        return loss / sqnorm
    if variant == "pa1":
        return min(C, loss / sqnorm)
    if variant == "pa2":
        return loss / (sqnorm + 1.0 / (2.0 * C))
    raise ValueError(f"unknown Passive-Aggressive variant {variant!r}")


class PassiveAggressive(Learner):
    """Shared Passive-Aggressive step; subclasses say which vector a task uses."""

    params: ClassVar[tuple[Param, ...]] = (
        Param(
            "variant",
            "pa1",
            "pa: tau = l/||x||^2; pa1 (PA-I): min(C, l/||x||^2); pa2 (PA-II): "
            "l/(||x||^2 + 1/(2C)) (Crammer et al. 2006, Eqs. 7-9).",
            one_of("pa", "pa1", "pa2"),
        ),
        Param("C", 1.0, "Aggressiveness of PA-I / PA-II (LIBOL default 1).", positive),
        APPEND_BIAS,
        L2_NORMALIZE,
    )
    conformance_params: ClassVar[tuple[dict[str, object], ...]] = (
        {},
        {"variant": "pa"},
        {"variant": "pa2", "C": 0.5, "append_bias": True, "l2_normalize": True},
    )

    n_updates_: int

    def _vector(self, task: int) -> np.ndarray:
        """The weight vector (a writable view) task ``task`` predicts with."""
        raise NotImplementedError

    def _decision(self, x: Vec, task: int) -> float:
        return x.dot(self._vector(task))

    def _learn(self, x: Vec, y: float, task: int) -> None:
        w = self._vector(task)
        loss = 1.0 - y * x.dot(w)
        sqnorm = x.sqnorm()
        if loss <= 0.0 or sqnorm == 0.0:
            return
        tau = step_size(self.hyper["variant"], loss, sqnorm, self.hyper["C"])
        x.add_to(w, tau * y)
        self.n_updates_ += 1


class PassiveAggressiveIndividualReference(PassiveAggressive):
    """PA-individual: one Passive-Aggressive learner per task (zhang2018 baseline).

    Task k keeps its own ``w_k`` and takes the step of Crammer et al. (2006)
    Eqs. 7-9 on its own examples (module docstring). O(nnz) per event.

    Attributes
    ----------
    W_ : ndarray, shape (K, d)
        One weight vector per task.
    n_updates_ : int
        Number of rounds with positive hinge loss (updates).
    """

    name = "pa-individual"
    summary = "PA-individual: one Passive-Aggressive learner (PA, PA-I, PA-II) per task"
    paper = f"{ZHANG2018} (baseline); {CRAMMER2006}"
    state_fields = ("W_", "n_updates_")

    def _init_state(self) -> None:
        self.W_ = np.zeros((self.n_tasks, self.dim))
        self.n_updates_ = 0

    def _vector(self, task: int) -> np.ndarray:
        return self.W_[task]

    def _add_task(self) -> None:
        self.W_ = np.vstack([self.W_, np.zeros((1, self.dim))])

    relation_kind = "fixed-interaction"
    relation_meaning = "Fixed identity matrix: every task learns on its own, nothing is shared."

    def _relation(self) -> np.ndarray:
        return np.eye(self.n_tasks)

    def _task_weights(self) -> np.ndarray:
        return self.W_.copy()


class PassiveAggressiveGlobalReference(PassiveAggressive):
    """PA-global: one Passive-Aggressive learner for all tasks (zhang2018 baseline).

    The task index is ignored; every example takes the step of Crammer et al.
    (2006) Eqs. 7-9 on the shared ``w``. O(nnz) per event.

    Attributes
    ----------
    w_ : ndarray, shape (d,)
        The shared weight vector.
    n_updates_ : int
        Number of rounds with positive hinge loss (updates).
    """

    name = "pa-global"
    summary = "PA-global: one Passive-Aggressive learner (PA, PA-I, PA-II) for all tasks"
    paper = f"{ZHANG2018} (baseline); {CRAMMER2006}"
    state_fields = ("w_", "n_updates_")

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """One shared weight vector of length ``d (+1)``, whatever the number of tasks."""
        return 8 * 2 * (int(n_features) + 1)

    def _init_state(self) -> None:
        self.w_ = np.zeros(self.dim)
        self.n_updates_ = 0

    def _vector(self, task: int) -> np.ndarray:
        return self.w_

    def _add_task(self) -> None:
        """Nothing to grow: all tasks share one vector."""

    relation_kind = "fixed-interaction"
    relation_meaning = "Fixed all-ones matrix: one predictor is pooled over every task."

    def _relation(self) -> np.ndarray:
        return np.ones((self.n_tasks, self.n_tasks))

    def _task_weights(self) -> np.ndarray:
        return np.tile(self.w_, (self.n_tasks, 1))
