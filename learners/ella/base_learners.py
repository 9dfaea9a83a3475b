"""Single-task base learners: ``(theta_t, D_t)`` of ruvolo2014 Eq. (7).

Both learners minimise ``(1/n) sum_i Loss(x_i^T theta, y_i) + ridge ||theta||^2`` and
return the matrix of Eq. (7),
``D = ridge I + Hessian_theta (1/(2n)) sum_i Loss``, evaluated at ``theta``:

* linear regression, ``Loss = (y - x^T theta)^2``: ``D = ridge I + X^T X / n`` and
  ``theta = D^{-1} X^T y / n`` (closed form, from the sufficient statistics);
* logistic regression, ``Loss = log(1 + exp(-y x^T theta))`` with ``y`` in {-1, +1}:
  ``D = ridge I + (1/(2n)) sum_i p_i (1 - p_i) x_i x_i^T``, ``theta`` by Newton's
  method with step halving.

Putting ``ridge`` inside ``D`` is the AAAI-2014 form (docs/algorithms.md Sec. 4.1); it
keeps ``D`` positive definite, which the GSVD step needs. With ``n = 0`` the fit
is ``theta = 0, D = ridge I``.

``ridge`` may also be a vector ``p`` (one weight per coordinate): the penalty is then
``theta^T diag(p) theta`` and ``D = diag(p) + Hessian ...``. :func:`icml_ridge` builds
the vector of the ICML-2013 / MATLAB form (docs/algorithms.md Sec. 4.1, Sec. 8 #12), where
``D`` is half the Hessian of the whole fitting objective with a ridge that scales as
``1/n`` and leaves the bias free: ``D = (X^T X + ridge I') / n`` (linear) and
``D = (1/(2n)) (sum_i p_i (1 - p_i) x_i x_i^T + ridge I')`` (logistic).
"""

from __future__ import annotations

import numpy as np

from learners.ella.solve import solve_symmetric

__all__ = ["fit_linear", "fit_logistic", "icml_ridge", "logistic_objective"]

NEWTON_MAX_ITER = 100
NEWTON_TOL = 1e-10


Ridge = float | np.ndarray


def icml_ridge(ridge: float, d: int, n: int, logistic: bool, free_bias: bool) -> np.ndarray:
    """The per-coordinate penalty of the ICML / MATLAB form (docs/algorithms.md Sec. 4.1).

    ``ridge / n`` (linear) or ``ridge / (2n)`` (logistic) on every coordinate, 0 on the
    last one (the bias) when ``free_bias``; so ``D`` is ``(X^T X + ridge I') / n`` or
    ``(1/(2n)) (sum_i p_i (1 - p_i) x_i x_i^T + ridge I')``, as the MATLAB code builds it.
    With ``n = 0`` it is ``ridge`` everywhere (the no-data fit ``theta = 0, D = ridge I``).
    """
    if n == 0:
        return np.full(d, float(ridge))
    p = np.full(d, ridge / (2.0 * n if logistic else float(n)))
    if free_bias:
        p[-1] = 0.0
    return p


def fit_linear(
    xtx: np.ndarray, xty: np.ndarray, n: int, ridge: Ridge
) -> tuple[np.ndarray, np.ndarray]:
    """Ridge regression from ``X^T X``, ``X^T y`` and ``n``; returns ``(theta, D)``.

    ``ridge`` is a scalar or one weight per coordinate (see the module docstring).
    Cost O(d^3) (one d x d solve), whatever ``n`` is. A system that rounding makes
    singular gets the least-squares solution (:func:`learners.ella.solve.solve_symmetric`).
    """
    d = xty.shape[0]
    if n == 0:
        return np.zeros(d), ridge * np.eye(d)
    D = xtx / n + ridge * np.eye(d)
    D = 0.5 * (D + D.T)
    return solve_symmetric(D, xty / n, bool(np.min(ridge) > 0)), D


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -z))


def logistic_objective(theta: np.ndarray, X: np.ndarray, y: np.ndarray, ridge: Ridge) -> float:
    """``(1/n) sum_i log(1 + exp(-y_i x_i^T theta)) + theta^T diag(ridge) theta``."""
    margins = y * (X @ theta)
    return float(np.mean(np.logaddexp(0.0, -margins)) + theta @ (ridge * theta))


def fit_logistic(X: np.ndarray, y: np.ndarray, ridge: Ridge) -> tuple[np.ndarray, np.ndarray]:
    """Regularised logistic regression by Newton's method; returns ``(theta, D)``.

    Cost O(iterations * (n d^2 + d^3)); Newton converges in a few iterations.
    """
    n, d = X.shape
    if n == 0:
        return np.zeros(d), ridge * np.eye(d)
    theta = np.zeros(d)
    value = logistic_objective(theta, X, y, ridge)
    for _ in range(NEWTON_MAX_ITER):
        p = _sigmoid(X @ theta)
        grad = X.T @ (p - (y > 0)) / n + 2.0 * ridge * theta
        H = (X.T * (p * (1.0 - p))) @ X / n + 2.0 * ridge * np.eye(d)
        step = np.linalg.lstsq(H, grad, rcond=None)[0]
        t = 1.0
        while t >= 1e-10:
            candidate = theta - t * step
            new_value = logistic_objective(candidate, X, y, ridge)
            if new_value <= value:
                break
            t *= 0.5
        else:
            break  # no descent along the Newton direction: at the optimum to rounding
        improvement = value - new_value
        theta, value = candidate, new_value
        if improvement <= NEWTON_TOL * (1.0 + abs(value)):
            break
    p = _sigmoid(X @ theta)
    D = (X.T * (p * (1.0 - p))) @ X / (2.0 * n) + ridge * np.eye(d)
    return theta, 0.5 * (D + D.T)
