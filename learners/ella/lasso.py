"""The sparse-coding step of ruvolo2014 Eq. (11) (L1 relaxation, docs/algorithms.md Sec. 4.2).

``s = argmin_s ||theta - L s||^2_D + mu ||s||_1``.

Expanding the D-norm gives the quadratic ``s^T Q s - 2 c^T s + const`` with
``Q = L^T D L`` (k x k) and ``c = L^T D theta``, so the Lasso is solved on ``(Q, c)``
without forming ``D^{1/2}``, by feature-sign search (an exact active-set method).
Forming ``Q`` and ``c`` costs O(d^2 k + d k^2) and each step one solve on the
active set, O(k^3): below the paper's O(d^3 + d^2 k + k^2 d) (its ``d^3`` is the
square root of D, which this form does not need).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

__all__ = ["is_optimal", "lasso_objective", "sparse_code", "sparse_code_quadratic", "sparse_codes"]

#: Bound on feature-sign steps (never reached in practice: each step lowers the objective).
MAX_STEPS = 200
#: Bound on the coordinate-descent sweeps of the fallback.
MAX_SWEEPS = 20000
#: Smallest pivot ratio of Q for the all-active shortcut.
CONDITION = 1e-10
#: Relative tolerance of the optimality conditions.
TOL = 1e-9


def lasso_objective(
    L: np.ndarray, D: np.ndarray, theta: np.ndarray, s: np.ndarray, mu: float
) -> float:
    """``||theta - L s||^2_D + mu ||s||_1``."""
    r = theta - L @ s
    return float(r @ D @ r + mu * np.abs(s).sum())


def _objective(Q: np.ndarray, c: np.ndarray, mu: float, s: np.ndarray) -> float:
    return float(s @ Q @ s - 2.0 * c @ s + mu * np.abs(s).sum())


def _feature_sign_step(
    Q: np.ndarray, c: np.ndarray, mu: float, s: np.ndarray, signs: np.ndarray
) -> np.ndarray:
    """Minimise over the active set with fixed signs, then line-search back to ``s``.

    The unconstrained minimiser on the active set ``A`` solves
    ``Q_AA s_A = c_A - (mu / 2) signs_A``; the objective is checked there and at every
    point of the segment from ``s`` where an active coefficient crosses zero, and
    the best of them is returned.
    """
    active = np.flatnonzero(signs)
    target = np.zeros_like(s)
    rhs = c[active] - 0.5 * mu * signs[active]
    target[active] = np.linalg.lstsq(Q[np.ix_(active, active)], rhs, rcond=None)[0]
    best, best_value = target, _objective(Q, c, mu, target)
    moved = target - s
    crossing = (s != 0.0) & (np.sign(target) != np.sign(s))
    for j in np.flatnonzero(crossing).tolist():
        point = s + (s[j] / (s[j] - target[j])) * moved
        point[j] = 0.0
        value = _objective(Q, c, mu, point)
        if value < best_value:
            best, best_value = point, value
    return best


def is_optimal(Q: np.ndarray, c: np.ndarray, mu: float, s: np.ndarray, tol: float = 1e-9) -> bool:
    """The optimality (KKT) conditions: ``g_j = -mu sign(s_j)`` on the support and
    ``|g_j| <= mu`` off it, with ``g = 2 (Q s - c)`` (coordinates with ``Q_jj = 0`` excepted).

    The problem is convex, so a point meeting them is a global minimiser.
    """
    scale = tol * (
        1.0 + float(np.abs(c).max(initial=0.0)) + mu + float(np.abs(Q @ s).max(initial=0.0))
    )
    g = 2.0 * (Q @ s - c)
    on = s != 0.0
    off = ~on & (np.diag(Q) > 0.0)
    return bool(
        np.all(np.abs(g[on] + mu * np.sign(s[on])) <= scale)
        and np.all(np.abs(g[off]) <= mu + scale)
    )


def _coordinate_descent(Q: np.ndarray, c: np.ndarray, mu: float, s: np.ndarray) -> np.ndarray:
    """Cyclic coordinate descent from ``s`` (the fallback for a singular ``Q``).

    Coordinate ``j`` is set to ``soft(c_j - sum_{r != j} Q_jr s_r, mu / 2) / Q_jj``;
    stops when the optimality conditions hold or after ``MAX_SWEEPS`` sweeps.
    """
    s = s.copy()
    diag = np.diag(Q)
    active = [j for j in range(c.shape[0]) if diag[j] > 0.0]
    for sweep in range(MAX_SWEEPS):
        for j in active:
            rho = c[j] - Q[j] @ s + diag[j] * s[j]
            s[j] = np.sign(rho) * max(abs(rho) - 0.5 * mu, 0.0) / diag[j]
        if sweep % 10 == 9 and is_optimal(Q, c, mu, s):
            break
    return s


def _support_optimal(Q: np.ndarray, c: np.ndarray, mu: float, s: np.ndarray, tol: float) -> bool:
    """``g_j + mu sign(s_j) = 0`` (to ``tol``) on the support of ``s``."""
    on = s != 0.0
    g = 2.0 * (Q[on] @ s - c[on])
    return bool(np.all(np.abs(g + mu * np.sign(s[on])) <= tol))


def _all_active_guess(Q: np.ndarray, c: np.ndarray, mu: float) -> np.ndarray | None:
    """The answer when every coordinate is active (common for a small ``mu``), or None.

    With a well-conditioned ``Q`` (Cholesky, pivots above ``CONDITION`` times the
    largest) and the signs ``z`` of the unpenalised minimiser, ``s`` solves
    ``Q s = c - (mu / 2) z``; it is returned only if its signs are ``z`` and it meets
    the optimality conditions, so a returned value is always the minimiser.
    """
    try:
        chol = np.linalg.cholesky(Q)
    except np.linalg.LinAlgError:
        return None
    pivots = np.diag(chol) ** 2
    if pivots.min() <= CONDITION * pivots.max():
        return None

    def solve(rhs: np.ndarray) -> np.ndarray:
        return np.asarray(solve_triangular(chol.T, solve_triangular(chol, rhs, lower=True)))

    signs = np.sign(solve(c))
    if not signs.all():
        return None
    s = solve(c - 0.5 * mu * signs)
    if np.array_equal(np.sign(s), signs) and is_optimal(Q, c, mu, s):
        return s
    return None


def sparse_code_quadratic(Q: np.ndarray, c: np.ndarray, mu: float) -> np.ndarray:
    """Minimise ``s^T Q s - 2 c^T s + mu ||s||_1`` for a PSD ``Q`` (feature-sign search).

    Lee, Battle, Raina & Ng (NIPS 2006), "feature-sign search": grow the active set
    by the zero coefficient with the largest violation ``|g_j| > mu`` of the
    optimality condition (``g = 2 (Q s - c)``), solve the problem on the active set
    with the signs fixed (:func:`_feature_sign_step`), and repeat until
    ``g_j + mu sign(s_j) = 0`` on the support and ``|g_j| <= mu`` off it. With a
    non-singular ``Q`` each step strictly decreases the objective, so it ends after
    finitely many steps, each one k x k solve. When ``Q`` is singular (k > d) and
    the result misses the optimality conditions, coordinate descent finishes from
    there. Coordinates with ``Q_jj = 0`` (an all-zero atom) stay at 0.
    """
    guess = _all_active_guess(Q, c, mu)
    if guess is not None:
        return guess
    usable = np.diag(Q) > 0.0
    tol = TOL * (1.0 + float(np.abs(c).max(initial=0.0)) + mu)
    s = np.zeros(c.shape[0])
    steps = 0
    while steps < MAX_STEPS:
        while steps < MAX_STEPS and not _support_optimal(Q, c, mu, s, tol):
            steps += 1
            s = _feature_sign_step(Q, c, mu, s, np.sign(s))
        g = 2.0 * (Q @ s - c)
        violation = np.where(usable & (s == 0.0), np.abs(g), 0.0)
        j = int(np.argmax(violation))
        if violation[j] <= mu + tol:
            break
        signs = np.sign(s)
        signs[j] = -np.sign(g[j])
        steps += 1
        s = _feature_sign_step(Q, c, mu, s, signs)
    return s if is_optimal(Q, c, mu, s) else _coordinate_descent(Q, c, mu, s)


def sparse_code(L: np.ndarray, D: np.ndarray, theta: np.ndarray, mu: float) -> np.ndarray:
    """The code ``s`` of Eq. (11) for the task model ``(theta, D)`` over the basis ``L``."""
    DL = D @ L
    Q = L.T @ DL
    Q = 0.5 * (Q + Q.T)
    c = DL.T @ theta
    return sparse_code_quadratic(Q, c, mu)


def sparse_codes(L: np.ndarray, Ds: np.ndarray, thetas: np.ndarray, mu: float) -> np.ndarray:
    """:func:`sparse_code` for many task models at once (rows of the result).

    The all-active shortcut runs as one stacked solve; every task it does not settle
    (the answer there is not all-active, or ``Q`` is ill-conditioned) goes through
    :func:`sparse_code_quadratic` on its own. Same minimisers as calling
    :func:`sparse_code` per task.
    """
    DL = Ds @ L
    Q = np.einsum("dk,tdj->tkj", L, DL)
    Q = 0.5 * (Q + np.swapaxes(Q, 1, 2))
    c = np.einsum("tdk,td->tk", DL, thetas)
    T, k = c.shape
    out = np.zeros((T, k))
    settled = np.zeros(T, dtype=bool)
    diag = np.diagonal(Q, axis1=1, axis2=2)
    well = (diag.min(axis=1, initial=np.inf) > 0.0) & (T > 0)
    if well.any():
        idx = np.flatnonzero(well)
        try:
            signs = np.sign(np.linalg.solve(Q[idx], c[idx][..., None])[..., 0])
            s = np.linalg.solve(Q[idx], (c[idx] - 0.5 * mu * signs)[..., None])[..., 0]
        except np.linalg.LinAlgError:
            idx = np.zeros(0, dtype=np.int64)
        if idx.size:
            Qs = np.einsum("tkj,tj->tk", Q[idx], s)
            scale = TOL * (1.0 + np.abs(c[idx]).max(axis=1) + mu + np.abs(Qs).max(axis=1))
            kkt = np.abs(2.0 * (Qs - c[idx]) + mu * signs).max(axis=1) <= scale
            eig_ok = np.linalg.eigvalsh(Q[idx]).min(axis=1) > CONDITION * diag[idx].max(axis=1)
            good = kkt & eig_ok & (signs != 0).all(axis=1) & (np.sign(s) == signs).all(axis=1)
            out[idx[good]] = s[good]
            settled[idx[good]] = True
    for t in np.flatnonzero(~settled).tolist():
        out[t] = sparse_code_quadratic(Q[t], c[t], mu)
    return out
