"""Interaction matrices of the multitask Perceptron (docs/algorithms.md Sec. 1.2).

The multitask Perceptron (Cavallanti, Cesa-Bianchi & Gentile 2010, Fig. 1;
saha2011 Eq. 2.2) updates every task j on a mistake of task i by
``y (A^{-1})_{j,i} x`` for a symmetric positive definite ``K x K`` matrix A.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.linalg as la

__all__ = [
    "BFamily",
    "GivenMatrix",
    "Interaction",
    "b_family_inverse",
    "b_family_matrix",
    "check_spd",
    "graph_matrix",
    "interaction_from_params",
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
    """``A = I + c L`` with L the Laplacian of a weighted task graph (docs/algorithms.md Sec. 1.2).

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


class Interaction:
    """How the interaction matrix A of a multitask Perceptron is given (docs/algorithms.md Sec. 1.2).

    Two forms, chosen once from the ``cmtl`` hyperparameters by :func:`interaction_from_params`:
    :class:`BFamily` (A follows the number of tasks K) and :class:`GivenMatrix` (a task
    graph or an explicit SPD matrix, fixed; tasks beyond its size are independent).
    """

    #: Whether A^{-1} changes for the existing tasks when a task is added.
    follows_task_count: bool = False

    def inverse(self, n_tasks: int) -> np.ndarray:
        """``A^{-1}`` for ``n_tasks`` tasks."""
        raise NotImplementedError

    def grown_inverse(self, Ainv: np.ndarray) -> np.ndarray:
        """``A^{-1}`` after one task is added to the ``K x K`` ``Ainv``."""
        raise NotImplementedError

    def matrix(self, Ainv: np.ndarray) -> np.ndarray:
        """The ``K x K`` interaction matrix A itself, given the current ``Ainv``."""
        raise NotImplementedError

    def inverse_sqrt(self, Ainv: np.ndarray) -> np.ndarray:
        """``A^{-1/2}`` for the current ``Ainv``."""
        raise NotImplementedError

    def grown_inverse_sqrt(self, Ainv: np.ndarray, R: np.ndarray) -> np.ndarray:
        """``A^{-1/2}`` after one task is added; ``Ainv`` is already grown, ``R`` is not."""
        raise NotImplementedError


class BFamily(Interaction):
    """``A_b = (1 + b) I - (b / K) 1 1^T``; ``b`` None follows K (saha2011 Sec. 2)."""

    follows_task_count = True

    def __init__(self, b: float | None) -> None:
        self.b = b

    def b_for(self, n_tasks: int) -> float:
        """The coupling b in use with ``n_tasks`` tasks."""
        return float(n_tasks if self.b is None else self.b)

    def inverse(self, n_tasks: int) -> np.ndarray:
        return b_family_inverse(n_tasks, self.b_for(n_tasks))

    def grown_inverse(self, Ainv: np.ndarray) -> np.ndarray:
        return self.inverse(Ainv.shape[0] + 1)

    def matrix(self, Ainv: np.ndarray) -> np.ndarray:
        return b_family_matrix(Ainv.shape[0], self.b_for(Ainv.shape[0]))

    def inverse_sqrt(self, Ainv: np.ndarray) -> np.ndarray:
        """Closed form ``(I - J)/sqrt(1 + b) + J`` with ``J = 1 1^T / K`` (docs/algorithms.md Sec. 1.2)."""
        K = Ainv.shape[0]
        J = np.full((K, K), 1.0 / K)
        return (np.eye(K) - J) / math.sqrt(1.0 + self.b_for(K)) + J

    def grown_inverse_sqrt(self, Ainv: np.ndarray, R: np.ndarray) -> np.ndarray:
        return self.inverse_sqrt(Ainv)


class GivenMatrix(Interaction):
    """A fixed SPD ``A`` (a task graph's ``I + c L`` or the user's matrix), padded with I."""

    def __init__(self, A: np.ndarray) -> None:
        self.A = A

    def inverse(self, n_tasks: int) -> np.ndarray:
        K = n_tasks
        if self.A.shape[0] > K:
            raise ValueError(
                f"interaction matrix is {self.A.shape[0]} x {self.A.shape[0]} but n_tasks = {K}"
            )
        A = np.eye(K)
        A[: self.A.shape[0], : self.A.shape[0]] = self.A
        return spd_inverse(A)

    def grown_inverse(self, Ainv: np.ndarray) -> np.ndarray:
        return _pad_identity(Ainv)

    def matrix(self, Ainv: np.ndarray) -> np.ndarray:
        return spd_inverse(Ainv)

    def inverse_sqrt(self, Ainv: np.ndarray) -> np.ndarray:
        """By ``eigh`` of ``A^{-1}``, symmetrised."""
        lam, Q = np.linalg.eigh(Ainv)
        R = (Q * np.sqrt(np.maximum(lam, 0.0))) @ Q.T
        return 0.5 * (R + R.T)

    def grown_inverse_sqrt(self, Ainv: np.ndarray, R: np.ndarray) -> np.ndarray:
        return _pad_identity(R)


def _pad_identity(M: np.ndarray) -> np.ndarray:
    """``M`` with one more identity row and column (a new, independent task)."""
    K = M.shape[0] + 1
    grown = np.eye(K)
    grown[: K - 1, : K - 1] = M
    return grown


def interaction_from_params(params: Mapping[str, Any]) -> Interaction:
    """The interaction form the ``cmtl`` hyperparameters ``b``, ``graph``, ``graph_scale``, ``A`` give."""
    if params["graph"] is not None:
        return GivenMatrix(graph_matrix(params["graph"], params["graph_scale"]))
    if params["A"] is not None:
        return GivenMatrix(np.asarray(params["A"], dtype=np.float64))
    return BFamily(params["b"])
