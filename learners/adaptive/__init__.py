"""Adaptive multitask learners (docs/algorithms.md Sec. 11).

Shared + per-task linear models ``score = <u_0 + u_k, x>`` trained with
per-coordinate adaptive, scale-normalised, importance-invariant steps on the
logistic or hinge loss, or with a diagonal AROW update; and ``adaptive``, the
online model selection over a small grid of them run side by side in one pass.

* :mod:`learners.adaptive.steps` -- the scalar steps (loss slopes, invariant updates);
* :mod:`learners.adaptive.configs` -- the configuration grid (loss, step, coupling);
* :mod:`learners.adaptive.reference` -- the numpy per-event update (the reference);
* :mod:`learners.adaptive.kernels` -- the compiled batch pass;
* :mod:`learners.adaptive.learners` -- the registered learners;
* :mod:`learners.adaptive.views` -- ``adaptive-auto``, the selection over input scalings too.
"""

from __future__ import annotations

from learners.adaptive.learners import (
    AdaptiveArow,
    AdaptiveHinge,
    AdaptiveLogistic,
    AdaptiveSelector,
)
from learners.adaptive.views import AdaptiveViews

__all__ = [
    "AdaptiveArow",
    "AdaptiveHinge",
    "AdaptiveLogistic",
    "AdaptiveSelector",
    "AdaptiveViews",
]
