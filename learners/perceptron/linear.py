"""The registered linear Perceptron-family learners, on compiled kernels.

Each class puts :class:`~learners.perceptron.compiled.CompiledLinear` in front
of its numpy reference (``reference_class``), which defines the mathematics
and the state layout; :mod:`learners.perceptron.kernels` runs it, row by row:

* ``ipl`` (:mod:`learners.perceptron.multitask`, saha2011 Table 1);
* ``stl`` and ``pt-global`` (one pooled Perceptron; saha2011, zhang2018);
* ``cmtl`` in its two layouts (saha2011 Eq. 2.2): :class:`BFamilyMultitaskPerceptron`
  and :class:`MatrixMultitaskPerceptron`, built by the registered
  :class:`~learners.perceptron.multitask.MultitaskPerceptron`;
* ``pa-individual`` and ``pa-global`` (Crammer et al. 2006, Eqs. 7-9;
  :mod:`learners.perceptron.passive_aggressive`).
"""

from __future__ import annotations

import numpy as np

from learners.perceptron import kernels
from learners.perceptron.compiled import CompiledLinear
from learners.perceptron.multitask import (
    ZHANG2018,
    BFamilyMultitaskPerceptronReference,
    IndependentPerceptronsReference,
    MatrixMultitaskPerceptronReference,
    PooledPerceptronReference,
)
from learners.perceptron.passive_aggressive import (
    PassiveAggressiveGlobalReference,
    PassiveAggressiveIndividualReference,
)
from learners.registry import register

__all__ = [
    "BFamilyMultitaskPerceptron",
    "GlobalPerceptron",
    "IndependentPerceptrons",
    "MatrixMultitaskPerceptron",
    "PassiveAggressiveGlobal",
    "PassiveAggressiveIndividual",
    "PooledPerceptron",
]


@register
class IndependentPerceptrons(CompiledLinear, IndependentPerceptronsReference):
    """K independent Perceptrons (``ipl``), compiled; see :class:`IndependentPerceptronsReference`."""

    kernel_kind = kernels.INDEPENDENT
    weight_fields = ("W_",)
    reference_class = IndependentPerceptronsReference


@register
class PooledPerceptron(CompiledLinear, PooledPerceptronReference):
    """One Perceptron pooled over all tasks (``stl``), compiled; see :class:`PooledPerceptronReference`."""

    kernel_kind = kernels.POOLED
    weight_fields = ("w_",)
    reference_class = PooledPerceptronReference


@register
class GlobalPerceptron(PooledPerceptron):
    """PT-global: one Perceptron for all tasks, the baseline of zhang2018 (Table I).

    The same algorithm as ``stl``, listed under the name the ROM paper uses.
    """

    name = "pt-global"
    summary = "PT-global: one Perceptron for all tasks (zhang2018 baseline)"
    paper = ZHANG2018


class BFamilyMultitaskPerceptron(CompiledLinear, BFamilyMultitaskPerceptronReference):
    """``cmtl`` with the b-family A, compiled; see :class:`BFamilyMultitaskPerceptronReference`."""

    kernel_kind = kernels.B_FAMILY
    weight_fields = ("V_", "s_")
    reference_class = BFamilyMultitaskPerceptronReference

    def _kernel_constants(self) -> tuple[float, float]:
        b = self._b()
        return b / self.n_tasks, 1.0 + b


class MatrixMultitaskPerceptron(CompiledLinear, MatrixMultitaskPerceptronReference):
    """``cmtl`` with a graph or SPD A, compiled; see :class:`MatrixMultitaskPerceptronReference`."""

    kernel_kind = kernels.MATRIX
    weight_fields = ("W_",)
    reference_class = MatrixMultitaskPerceptronReference

    def _kernel_matrix(self) -> np.ndarray:
        return np.ascontiguousarray(self.Ainv_)


class _CompiledPassiveAggressive(CompiledLinear):
    update_counter = "n_updates_"
    # ||x||^2 of a float32 row would be summed from float32 products: rows go in as float64
    float32_rows = False

    def _updated(self, score: float, y: float, val: np.ndarray) -> bool:
        # The hinge loss is positive and x is not zero (a zero x scores 0 and changes nothing).
        return 1.0 - y * score > 0.0 and (score != 0.0 or bool(val.any()))

    def _kernel_constants(self) -> tuple[float, float]:
        return kernels.PA_VARIANTS[self.hyper["variant"]], float(self.hyper["C"])


@register
class PassiveAggressiveIndividual(_CompiledPassiveAggressive, PassiveAggressiveIndividualReference):
    """PA-individual, compiled; see :class:`PassiveAggressiveIndividualReference`."""

    kernel_kind = kernels.PA_TASK
    weight_fields = ("W_",)
    reference_class = PassiveAggressiveIndividualReference


@register
class PassiveAggressiveGlobal(_CompiledPassiveAggressive, PassiveAggressiveGlobalReference):
    """PA-global, compiled; see :class:`PassiveAggressiveGlobalReference`."""

    kernel_kind = kernels.PA_POOLED
    weight_fields = ("w_",)
    reference_class = PassiveAggressiveGlobalReference
