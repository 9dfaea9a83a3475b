"""Interaction matrices of the multitask Perceptron (algorithms.md Sec. 1.2).

The multitask Perceptron (Cavallanti, Cesa-Bianchi & Gentile 2010, Fig. 1;
saha2011 Eq. 2.2) updates every task j on a mistake of task i by
``y (A^{-1})_{j,i} x`` for a symmetric positive definite ``K x K`` matrix A.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.linalg as la

__all__ = [
    "b_family_inverse",
    "initial_interaction_inverse",
    "uses_b_family",
    "b_family_matrix",
    "check_spd",
    "graph_matrix",
    "spd_inverse",
]


def b_family_matrix(n_tasks: int, b: float) -> np.ndarray:
    """``A_b = (1 + b) I - (b / K) 1 1^T`` (saha2011 Sec. 2; b = K gives their CMTL)."""
    K = n_tasks
    return (1.0 + b) * np.eye(K) - (b / K) * np.ones((K, K))


def b_family_inverse(n_tasks: int, b: float) -> np.ndarray:
    """``A_b^{-1} = (I + (b / K) 1 1^T) / (1 + b)``; for b = K, ``(I + 1 1^T) / (K + 1)``."""
    K = n_tasks
    return (np.eye(K) + (b / K) * np.ones((K, K))) / (1.0 + b)


def graph_matrix(adjacency: Any, scale: float = 1.0) -> np.ndarray:
    """``A = I + c L`` with L the Laplacian of a weighted task graph (algorithms.md Sec. 1.2).

    ``adjacency`` must be a symmetric ``K x K`` matrix of non-negative weights;
    its diagonal is ignored. The result is positive definite (eigenvalues >= 1).
    """
    W = np.array(adjacency, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"graph must be a square K x K matrix, got shape {W.shape}")
    if not np.isfinite(W).all() or (W < 0).any():
        raise ValueError("graph weights must be finite and non-negative")
    if not np.allclose(W, W.T, rtol=0.0, atol=1e-12):
        raise ValueError("graph must be symmetric")
    np.fill_diagonal(W, 0.0)
    laplacian = np.diag(W.sum(axis=1)) - W
    return np.eye(W.shape[0]) + scale * laplacian


def check_spd(A: Any) -> np.ndarray:
    """Return ``A`` as a float array after checking it is symmetric positive definite."""
    M = np.array(A, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"interaction matrix must be square, got shape {M.shape}")
    if not np.isfinite(M).all():
        raise ValueError("interaction matrix must be finite")
    if not np.allclose(M, M.T, rtol=1e-10, atol=1e-12):
        raise ValueError("interaction matrix must be symmetric")
    try:
        la.cholesky(M, lower=True)
    except la.LinAlgError:
        raise ValueError("interaction matrix must be positive definite") from None
    return 0.5 * (M + M.T)


def spd_inverse(A: np.ndarray) -> np.ndarray:
    """Inverse of a symmetric positive definite matrix by Cholesky, symmetrised."""
    factor = la.cho_factor(A, lower=True)
    inv = la.cho_solve(factor, np.eye(A.shape[0]))
    return 0.5 * (inv + inv.T)


def uses_b_family(params: Mapping[str, Any]) -> bool:
    """True when neither a graph nor a matrix is given, so A is the b-family matrix."""
    return params["graph"] is None and params["A"] is None


def initial_interaction_inverse(params: Mapping[str, Any], n_tasks: int) -> np.ndarray:
    """``A^{-1}`` for ``n_tasks`` tasks, from the ``cmtl`` interaction parameters.

    b-family: ``A_b^{-1} = (I + (b/K) 1 1^T)/(1 + b)`` with ``b = K`` when ``b`` is
    None (saha2011 Sec. 2). Graph / matrix: ``A = I + c L`` or the given A, padded
    with identity rows and columns for tasks beyond its size (algorithms.md Sec. 1.2).
    """
    K = n_tasks
    if uses_b_family(params):
        b = params["b"]
        return b_family_inverse(K, float(K if b is None else b))
    given = (
        graph_matrix(params["graph"], params["graph_scale"])
        if params["graph"] is not None
        else params["A"]
    )
    if given.shape[0] > K:
        raise ValueError(
            f"interaction matrix is {given.shape[0]} x {given.shape[0]} but n_tasks = {K}"
        )
    A = np.eye(K)
    A[: given.shape[0], : given.shape[0]] = given
    return spd_inverse(A)
