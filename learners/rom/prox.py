"""The group-lasso proximal step shared by ROM-PGD and ROM-RDA.

Both closed forms of zhang2018 scale a vector by one factor,
``max(0, 1 - threshold / norm)``:

* Eq. 10 (PGD, Step II):  ``q = max(0, 1 - eta*gamma/||q_hat||) q_hat``, the
  minimiser of Eq. 9, ``1/(2 eta) ||q - q_hat||^2 + gamma ||q||``;
* Eq. 22 (RDA): ``q = max(0, 1 - gamma/||g_bar||) (-t g_bar / theta_t)``.

The factor is exactly zero whenever the threshold reaches the norm, which is
what makes whole columns of ``Q`` vanish.
"""

from __future__ import annotations

import numpy as np

__all__ = ["group_shrink", "shrink_factor"]


#: A running squared norm ``||v||^2 + 2 c <v, x> + c^2 ||x||^2`` of ``v + c x`` (ROM-RDA's
#: ``G_i``, ROM-PGD's ``q_hat``) that falls below this share of ``||v||^2 + c^2 ||x||^2``
#: has lost its leading digits to cancellation: it is then summed again entry by entry
#: (O(d), and only on such a step), which keeps its relative error below about 1e-12
#: (an exact zero of ``q_i`` hinges on it, Eqs. 10 and 22).
SQNORM_RECOMPUTE_BELOW = 1e-4


def shrink_factor(norm: float, threshold: float) -> float:
    """``max(0, 1 - threshold / norm)``; 0 for a zero vector (its prox is 0)."""
    if norm <= threshold or norm <= 0.0:
        return 0.0
    return 1.0 - threshold / norm


def group_shrink(v: np.ndarray, threshold: float) -> np.ndarray:
    """Group soft-thresholding: the minimiser of ``1/2 ||q - v||^2 + threshold ||q||_2``.

    With ``threshold = eta * gamma`` this is Eq. 10, the closed form of Eq. 9.
    Returns a new array; exactly zero when ``||v|| <= threshold``.
    """
    factor = shrink_factor(float(np.linalg.norm(v)), threshold)
    if factor == 0.0:
        return np.zeros_like(v)
    return factor * v
