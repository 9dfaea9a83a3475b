"""The "Independent" baseline of xu2018 (Sec. 4.2; docs/algorithms.md Sec. 3.2)."""

from __future__ import annotations

from typing import Any

from learners.active.selective import ADAPTIVE_B, SAMPLING_B, SelectiveSampling, default_on
from learners.amlc.common import XU2018
from learners.base import APPEND_BIAS, BUDGET, L2_NORMALIZE
from learners.registry import register

__all__ = ["Independent"]


@register
class Independent(SelectiveSampling):
    """Independent: a selective-sampling Perceptron per task, no transfer (xu2018 Sec. 4.2).

    "Independent uses the confidence which is purely computed from the weight
    vector of the current task": with ``f_k = <x, w_k>``, :meth:`query_one` asks
    with probability ``b / (b + |f_k|)`` (``b = 1`` in xu2018), and a queried
    mistake ``SGN(f_k) != y`` (``SGN(0) = +1``) updates ``w_k += y x`` only. This is
    the ``selective-sampling`` wrapper around ``ipl`` with the preprocessing of
    the authors' code (bias 1 appended, then L2-normalised) switched on.
    :meth:`relation_matrix` is the identity; :meth:`task_weights` the per-task ``w_k``.
    """

    name = "independent"
    summary = "Per-task selective-sampling Perceptrons, no transfer (xu2018 Independent)"
    paper = f"{XU2018} (Sec. 4.2, Independent)"
    params = (
        SAMPLING_B,
        ADAPTIVE_B,
        BUDGET,
        default_on(APPEND_BIAS),
        default_on(L2_NORMALIZE),
    )
    conformance_params = ({}, {"b": 0.5, "append_bias": False, "l2_normalize": False})

    def _base_spec(self) -> tuple[str, dict[str, Any]]:
        return "ipl", {}
