"""Lazily scaled vectors: ``v = scale * stored``, so a scalar shrink costs O(1).

ROM-PGD multiplies ``u`` by ``1/(1 + alpha eta / m)`` on every event (Eq. 6),
``p_i`` by ``1/(1 + beta eta)`` (Eq. 7) and ``q_i`` by the group-lasso factor
(Eq. 10); COML pulls each task towards the global model. Keeping each vector as
a stored array times a scalar turns those dense rescalings into one scalar
multiplication, and an update ``v += c x`` into ``stored += (c / scale) x``,
O(nnz(x)). When a scale falls below :data:`RENORMALISE_BELOW` it is folded back
into the stored array (O(d), once per many events) so nothing underflows.
"""

from __future__ import annotations

import numpy as np

from learners.inputs import Vec

__all__ = ["RENORMALISE_BELOW", "add_scaled", "rescale", "scaled_dense"]

#: Scales below this are folded into the stored vector (then the scale is 1).
RENORMALISE_BELOW = 1e-100


def add_scaled(x: Vec, stored: np.ndarray, scale: float, coef: float) -> None:
    """``v += coef * x`` for ``v = scale * stored`` (O(nnz)); ``scale`` must be > 0."""
    x.add_to(stored, coef / scale)


def rescale(stored: np.ndarray, scale: float, factor: float) -> float:
    """Multiply ``v = scale * stored`` by ``factor`` > 0; returns the new scale.

    Folds the scale into ``stored`` in place when it would drop below
    :data:`RENORMALISE_BELOW`.
    """
    scale *= factor
    if scale < RENORMALISE_BELOW:
        stored *= scale
        return 1.0
    return scale


def scaled_dense(stored: np.ndarray, scales: np.ndarray | float) -> np.ndarray:
    """The actual vectors: ``scales * stored`` (rows scaled one by one for 2-D input)."""
    if isinstance(scales, np.ndarray):
        return stored * scales[:, None]
    return stored * scales
