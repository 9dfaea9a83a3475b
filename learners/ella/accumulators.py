"""ELLA's accumulators and basis updates (Ruvolo & Eaton 2013; docs/algorithms.md Sec. 4.3, 4.7).

With ``vec(L)`` stacking the columns of ``L`` (block ``j`` is column ``j``), ELLA keeps

    A = sum_t (s_t s_t^T) kron D_t        (dk x dk),
    b = sum_t s_t kron (D_t theta_t)      (dk),

over the tasks that have contributed. The basis objective for fixed codes is

    F(L) = lam ||L||_F^2 + (1/T) sum_t ||theta_t - L s_t||^2_{D_t},

whose exact minimiser is ``vec(L) = (A/T + lam I)^{-1} b / T`` (:func:`solve_basis`,
O((dk)^3)). ELLA Incremental instead minimises ``F`` over one column at a time,
``(A_jj/T + lam I) l_j = (b_j - sum_{r != j} A_jr l_r) / T`` (:func:`update_columns`,
O(d^3 + k d^2) per column), which can never increase ``F``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from learners.ella.solve import solve_symmetric

__all__ = [
    "basis_objective",
    "contribution",
    "eq7_objective",
    "solve_basis",
    "update_columns",
]


def contribution(s: np.ndarray, D: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One task's terms ``((s s^T) kron D, s kron (D theta))``."""
    k, d = s.shape[0], D.shape[0]
    block = (np.outer(s, s)[:, None, :, None] * D[None, :, None, :]).reshape(k * d, k * d)
    return block, (s[:, None] * (D @ theta)[None, :]).reshape(k * d)


def _vec(L: np.ndarray) -> np.ndarray:
    return L.T.reshape(-1)


def _unvec(v: np.ndarray, d: int, k: int) -> np.ndarray:
    return np.ascontiguousarray(v.reshape(k, d).T)


def solve_basis(A: np.ndarray, b: np.ndarray, T: int, lam: float, d: int, k: int) -> np.ndarray:
    """ELLA's L step: the minimiser of ``F`` for ``T >= 1`` contributed tasks."""
    system = A / T + lam * np.eye(d * k)
    system = 0.5 * (system + system.T)
    return _unvec(solve_symmetric(system, b / T, lam > 0), d, k)


def update_columns(
    L: np.ndarray, A: np.ndarray, b: np.ndarray, T: int, lam: float, columns: Iterable[int]
) -> np.ndarray:
    """ELLA Incremental: one block Gauss-Seidel pass over ``columns`` (in the given order).

    Each column is set to the minimiser of ``F`` with every other column fixed,
    using the columns already updated in this pass. Returns a new ``L``.
    """
    d = L.shape[0]
    L = L.copy()
    for j in columns:
        rows = slice(j * d, (j + 1) * d)
        rhs = b[rows] - A[rows] @ _vec(L) + A[rows, rows] @ L[:, j]
        system = A[rows, rows] / T + lam * np.eye(d)
        system = 0.5 * (system + system.T)
        L[:, j] = solve_symmetric(system, rhs / T, lam > 0)
    return L


def basis_objective(
    L: np.ndarray, S: np.ndarray, thetas: np.ndarray, Ds: np.ndarray, lam: float
) -> float:
    """``F(L) = lam ||L||_F^2 + (1/T) sum_t ||theta_t - L s_t||^2_{D_t}`` over the given tasks."""
    R = thetas - S @ L.T
    T = max(S.shape[0], 1)
    return float(lam * np.sum(L * L) + np.einsum("ti,tij,tj->", R, Ds, R) / T)


def eq7_objective(
    L: np.ndarray,
    S: np.ndarray,
    thetas: np.ndarray,
    Ds: np.ndarray,
    n: np.ndarray,
    mu: float,
    penalty: str = "l1",
) -> float:
    """ruvolo2014 Eq. (7): ``sum_t ||theta_t - L s_t||^2_{D_t} / n_t + mu ||s_t||_p``.

    ``penalty="l1"`` is the L1 relaxation (``||s||_1``, the problem the Lasso codes
    solve); ``"l0"`` the penalty as printed in Eq. (7) (``||s||_0``, the number of
    non-zero code entries). This is the quality the Dual Update tests the ELLA-SVD
    step against (docs/algorithms.md Sec. 4.8 and Sec. 8 #13).
    """
    R = thetas - S @ L.T
    fit = np.einsum("ti,tij,tj->t", R, Ds, R) / np.maximum(n, 1)
    size = float(np.count_nonzero(S)) if penalty == "l0" else float(np.abs(S).sum())
    return float(fit.sum() + mu * size)
