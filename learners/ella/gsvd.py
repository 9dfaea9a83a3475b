"""The GSVD atom update of ruvolo2014 Eqs. (8)-(10) (docs/algorithms.md Sec. 4.5).

For atom ``j`` and the tasks ``A = {t : s_j^(t) != 0}`` with residuals
``e_t = theta_t - sum_{r != j} s_r^(t) l_r`` (columns of ``E``, d x |A|), the pair
``(l_j, s_j^(A))`` minimising Eq. (9) with a diagonal ``W``,

    sum_t w_tt ||e_t - l_j s_j^(t)||^2_M  =  ||M^{1/2} (E - l_j s_j^T) W^{1/2}||_F^2,

is the best rank-one approximation of ``E~ = M^{1/2} E W^{1/2}``: with
``E~ = U S V^T``, ``l_j = M^{-1/2} u_1`` and ``s_j^(A) = sigma_1 W^{-1/2} v_1``
(so ``l_j^T M l_j = 1``). ``M`` is the mean of the tasks' ``D`` and
``w_tt = 1^T D_t 1 / sum_{t'} 1^T D_t' 1`` (Eq. 10).

Cost: O(|A| d^2) to form ``M``, O(d^3) for its square roots (one symmetric
eigendecomposition) and O(d |A| min(d, |A|)) for the SVD: the paper's O(d^3 + r^2 d).
"""

from __future__ import annotations

import numpy as np

__all__ = ["atom_weights", "eq9_objective", "gsvd_rank_one", "psd_sqrt_pair"]

#: Floor for eigenvalues of M and for the task weights before inverting their roots.
FLOOR = 1e-12


def atom_weights(Ds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(M, w)`` of the paper for the stacked ``D`` matrices of the tasks in ``A``.

    ``M = mean_t D_t`` and ``w_t = 1^T D_t 1 / sum_t' 1^T D_t' 1`` (Eq. 10).
    """
    M = Ds.mean(axis=0)
    totals = Ds.sum(axis=(1, 2))
    denom = totals.sum()
    w = totals / denom if denom > 0 else np.full(Ds.shape[0], 1.0 / Ds.shape[0])
    return 0.5 * (M + M.T), w


def psd_sqrt_pair(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(M^{1/2}, M^{-1/2})`` of a symmetric PSD matrix (eigenvalues floored at FLOOR)."""
    values, vectors = np.linalg.eigh(M)
    values = np.maximum(values, FLOOR)
    root = np.sqrt(values)
    return (vectors * root) @ vectors.T, (vectors / root) @ vectors.T


def gsvd_rank_one(E: np.ndarray, M: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The minimiser ``(l, s)`` of Eq. (9) for residuals ``E`` (d x r), ``M`` and ``diag(w)``.

    The sign is fixed so that the largest-magnitude entry of ``s`` is positive (the
    product ``l s^T`` does not depend on it).
    """
    M_half, M_inv_half = psd_sqrt_pair(M)
    w_safe = np.maximum(w, FLOOR)
    w_half = np.sqrt(w_safe)
    U, sigma, Vt = np.linalg.svd(M_half @ E * w_half, full_matrices=False)
    atom = M_inv_half @ U[:, 0]
    s = sigma[0] * Vt[0] / w_half
    if s[np.argmax(np.abs(s))] < 0:
        atom, s = -atom, -s
    return atom, s


def eq9_objective(
    E: np.ndarray, M: np.ndarray, w: np.ndarray, atom: np.ndarray, s: np.ndarray
) -> float:
    """Eq. (9) with diagonal ``W``: ``sum_t w_t ||e_t - atom s_t||^2_M``."""
    R = E - np.outer(atom, s)
    return float(np.einsum("it,ij,jt,t->", R, M, R, w))
