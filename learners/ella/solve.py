"""The linear systems of the ELLA family, solved without failing on ill-conditioned data.

Three steps solve a symmetric system ``M v = r`` (docs/algorithms.md Sec. 4.1, 4.3):
the linear base learner's ridge regression (``M = X^T X / n + ridge I``,
:func:`learners.ella.base_learners.fit_linear`), ELLA's basis step (``M = A / T + lam I``,
:func:`learners.ella.accumulators.solve_basis`) and ELLA Incremental's column step. With
a positive ridge ``M`` is positive definite in exact arithmetic and an LU solve is the
fastest exact answer. In floating point it can still be singular: one example with
features near 1e10 puts entries near 1e20 into ``X^T X``, beside which every other
example's entries and the ridge round away (1e20 + 200 is 1e20), and LU then meets a
zero pivot (numpy raises ``LinAlgError: Singular matrix``). The example is in the
task's statistics by then, so the error would come back at every later refresh of the
task. :func:`solve_symmetric` then returns the least-squares solution of least norm
(``numpy.linalg.lstsq``, by SVD), the answer the learners use without a ridge; where LU
succeeds, its solution is returned as it is.
"""

from __future__ import annotations

import numpy as np

__all__ = ["solve_symmetric"]


def solve_symmetric(M: np.ndarray, r: np.ndarray, regularised: bool) -> np.ndarray:
    """``v`` with ``M v = r``: by LU when ``regularised`` (a positive ridge) and LU finds
    no zero pivot, else the least-squares solution of least norm (module docstring)."""
    if regularised:
        try:
            return np.linalg.solve(M, r)
        except np.linalg.LinAlgError:
            pass
    return np.linalg.lstsq(M, r, rcond=None)[0]
