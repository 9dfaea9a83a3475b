"""The interaction-matrix updates of saha2011 (Eqs. 3.7-3.10) as pure functions.

Notation (docs/algorithms.md Sec. 2.3): ``W`` holds the task weight vectors as rows,
shape (K, d) — the transpose of the paper's d x K matrix — so the paper's Gram
matrix ``W_s^T W_s`` is our ``G = W W^T``, shape (K, K), symmetric PSD, and
``sym(G) = G``. Every update returns the pair ``(A, A^{-1})``: the learners need
``A^{-1}`` for the weight update (Eq. 3.3) and ``A`` for the active rule (Sec. 4)
and :meth:`relation_matrix`, and computing both from one eigendecomposition keeps
them consistent.

Trace: ``normalize`` rescales ``A`` to unit trace after the update (docs/algorithms.md
Sec. 2.5: Eqs. 3.7 and 3.9 do not preserve the unit trace the paper claims, and
Eq. 3.8 preserves it only with Tsuda et al.'s normalisation). Ridge: the
covariance (3.9) and batch-optimal (3.10) matrices are singular whenever
``rank(W) < K``; ``A + eps I`` with ``eps = ridge * max(tr(A)/K, 1e-12)`` is
added before inverting (docs/algorithms.md Sec. 2.5).

The Gram matrix is kept incrementally (docs/algorithms.md Sec. 2.8): a weight update
``W' = W + c x^T`` changes it by rank-two terms computed from ``u = W x``, so an
A update costs O(K nnz(x) + K^3), never O(K^2 d).
"""

from __future__ import annotations

import numpy as np

from learners.omtl.numerics import (
    TINY,
    assemble,
    normalize_trace,
    spd_inverse_pair,
    sym,
    sym_eigh,
    sym_logm,
)

__all__ = [
    "batchopt_update",
    "covariance_from_gram",
    "covariance_update",
    "gram_after_batch",
    "gram_after_rank_one",
    "logdet_update",
    "ridged",
    "vonneumann_log_step",
    "vonneumann_update",
]


# ------------------------------------------------------------------ Gram matrix
def gram_after_rank_one(G: np.ndarray, u_post: np.ndarray, c: np.ndarray, xx: float) -> np.ndarray:
    """Gram matrix after the rank-one weight update ``W' = W + c x^T``.

    With ``u = W x`` before the update, ``G' = G + u c^T + c u^T + ||x||^2 c c^T``.
    Written with ``u_post = W' x = u + ||x||^2 c`` (what the learner has at hand
    after updating W): ``G' = G + u_post c^T + c u_post^T - ||x||^2 c c^T``.

    Parameters
    ----------
    G : ndarray, shape (K, K)
        ``W W^T`` before the update.
    u_post : ndarray, shape (K,)
        ``W' x``, the scores of x under the updated weights.
    c : ndarray, shape (K,)
        The update coefficients ``y (A^{-1})_{:, i_t}`` of Eq. (3.3).
    xx : float
        ``||x||^2``.

    Returns
    -------
    ndarray, shape (K, K)
        ``W' W'^T``, exactly symmetric.
    """
    cu = np.outer(c, u_post)
    return G + cu + cu.T - xx * np.outer(c, c)


def gram_after_batch(G: np.ndarray, W: np.ndarray, C: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Gram matrix after ``W' = W + C X`` (several mistakes applied with a fixed A).

    Parameters
    ----------
    G : ndarray, shape (K, K)
        ``W W^T`` before the update.
    W : ndarray, shape (K, d)
        Weights before the update.
    C : ndarray, shape (K, m)
        Column k holds the coefficients of mistake k: ``y_k (A^{-1})_{:, t_k}``.
    X : ndarray, shape (m, d)
        The mistaken rows.

    Returns
    -------
    ndarray, shape (K, K)
        ``G + (W X^T) C^T + C (X W^T) + C (X X^T) C^T``; cost O(m d (K + m) + K^2 m).
    """
    cross = (W @ X.T) @ C.T
    return sym(G + cross + cross.T + C @ (X @ X.T) @ C.T)


def covariance_from_gram(G: np.ndarray, colsum: np.ndarray, n_rows: int) -> np.ndarray:
    """``cov(W)`` of saha2011 Eq. (3.9) from ``G = W W^T`` and the row sums of W.

    The d coordinates are the observations and the K tasks the variables
    (``np.cov(W_paper, rowvar=False)``, docs/algorithms.md Sec. 2.3):
    ``C = (G - s s^T / d) / (d - 1)`` with ``s_k = sum_f W[k, f]``. Shape (K, K).
    For d = 1 the divisor is 1.
    """
    d = float(n_rows)
    return sym((G - np.outer(colsum, colsum) / d) / max(d - 1.0, 1.0))


def ridged(M: np.ndarray, ridge: float) -> np.ndarray:
    """``M + eps I`` with ``eps = ridge * max(tr(M)/K, 1e-12)`` (docs/algorithms.md Sec. 2.5)."""
    K = M.shape[0]
    eps = ridge * max(float(np.trace(M)) / K, 1e-12)
    return M + eps * np.eye(K)


# ------------------------------------------------------------------ A updates
def logdet_update(
    Ainv: np.ndarray, G: np.ndarray, eta: float, *, normalize: bool, floor: float
) -> tuple[np.ndarray, np.ndarray]:
    """OMTLLOG, saha2011 Eq. (3.7): ``A_s = (A_{s-1}^{-1} + eta sym(G))^{-1}``.

    Works on ``A^{-1}`` directly (docs/algorithms.md Sec. 2.3): ``A^{-1} += eta G``
    stays positive definite because G is PSD. The eigenvalues of the new
    ``A^{-1}`` are floored at ``floor`` times the largest.

    Parameters
    ----------
    Ainv : ndarray, shape (K, K)
        Current ``A^{-1}``, symmetric positive definite.
    G : ndarray, shape (K, K)
        ``W W^T`` (the paper's ``W^T W``).
    eta : float
        Learning rate of A (>= 0).
    normalize : bool
        Rescale A to unit trace (and ``A^{-1}`` by the inverse factor).
    floor : float
        Relative eigenvalue floor.

    Returns
    -------
    A, Ainv : ndarray, shape (K, K)
    """
    P, A = spd_inverse_pair(sym(Ainv + eta * G), floor)
    if normalize:
        A, factor = normalize_trace(A)
        P = P / factor
    return A, P


def vonneumann_update(
    A: np.ndarray, G: np.ndarray, eta: float, *, normalize: bool, floor: float
) -> tuple[np.ndarray, np.ndarray]:
    """OMTLVON, saha2011 Eq. (3.8): ``A_s = exp(log A_{s-1} - eta sym(G))``.

    ``log A`` comes from a floored eigendecomposition of A; the rest is
    :func:`vonneumann_log_step`. Returns ``(A_s, A_s^{-1})``, both (K, K).
    """
    _, A_new, Ainv_new = vonneumann_log_step(
        sym_logm(A, floor), G, eta, normalize=normalize, floor=floor
    )
    return A_new, Ainv_new


def vonneumann_log_step(
    L: np.ndarray, G: np.ndarray, eta: float, *, normalize: bool, floor: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eq. (3.8) in the log domain: from ``L = log A_{s-1}`` to ``log A_s``, ``A_s``, ``A_s^{-1}``.

    The stable recipe of docs/algorithms.md Sec. 2.3: ``M = L - eta G = Q diag(mu) Q^T``
    and ``A_s = Q diag(exp(mu - max mu)) Q^T`` — shifting by the largest
    eigenvalue cannot overflow, and the shifted exponents are clipped at
    ``log(floor)``, so the condition number of ``A_s`` is at most ``1/floor``.
    With ``normalize`` the eigenvalues are divided by their sum (Tsuda et al.'s
    matrix exponentiated gradient form: unit trace); without it the shift is
    undone (the literal Eq. 3.8, whose scale decays like ``exp(-eta G)``), and the
    eigenvalues are also floored at ``floor`` itself: otherwise A decays to 0 and
    ``A^{-1}`` (the weight steps) overflows the weights within a few hundred updates.
    Keeping ``log A`` rather than A as the state loses nothing to rounding in
    the small eigenvalues of A (recomputing ``log A`` from A would); ``A^{-1}``
    comes from the same eigendecomposition.

    Parameters
    ----------
    L : ndarray, shape (K, K)
        ``log A_{s-1}``, symmetric.
    G : ndarray, shape (K, K)
        ``W W^T``.
    eta : float
        Learning rate of A (>= 0).
    normalize : bool
        Unit trace after the update.
    floor : float
        Relative eigenvalue floor of ``A_s``, in (0, 1).

    Returns
    -------
    L_new, A_new, Ainv_new : ndarray, shape (K, K)
        ``log A_s`` (with the clipping and normalisation applied), ``A_s``, ``A_s^{-1}``.
    """
    mu, Q = sym_eigh(sym(L - eta * G))
    top = float(mu[-1])
    log_a = np.maximum(mu - top, np.log(floor))
    if normalize:
        log_a -= np.log(np.exp(log_a).sum())
    else:
        log_a = np.maximum(log_a + top, np.log(floor))
    return assemble(Q, log_a), assemble(Q, np.exp(log_a)), assemble(Q, np.exp(-log_a))


def covariance_update(
    G: np.ndarray,
    colsum: np.ndarray,
    n_rows: int,
    *,
    ridge: float,
    normalize: bool,
    as_inverse: bool,
    floor: float,
) -> tuple[np.ndarray, np.ndarray]:
    """OMTLCOV, saha2011 Eq. (3.9): ``A_s = cov(W_{s-1})``.

    Literal reading (default, docs/algorithms.md Sec. 2.5 and Sec. 8 item 1): A is the
    ridged covariance (unit trace with ``normalize``) and the learning rates are
    the entries of its inverse. With ``as_inverse`` the ridged covariance is used
    as ``A^{-1}`` instead (scaled to mean diagonal K with ``normalize``, the rate
    of the priming period ``A^{-1} = K I``), and A is its inverse.

    Parameters
    ----------
    G : ndarray, shape (K, K)
        ``W W^T``.
    colsum : ndarray, shape (K,)
        Sum of each task's weight vector over the d coordinates.
    n_rows : int
        d, the number of coordinates (the observations of the covariance).
    ridge, normalize, as_inverse, floor
        See the module docstring.

    Returns
    -------
    A, Ainv : ndarray, shape (K, K)
    """
    C = ridged(covariance_from_gram(G, colsum, n_rows), ridge)
    return _covariance_like(C, normalize=normalize, as_inverse=as_inverse, floor=floor)


def batchopt_update(
    G: np.ndarray, *, ridge: float, as_inverse: bool, floor: float
) -> tuple[np.ndarray, np.ndarray]:
    """BATCHOPT, saha2011 Eq. (3.10): ``A_s = G^{1/2} / tr(G^{1/2})``.

    The batch optimum of Zhang and Yeung (2010). One ``eigh`` of G gives
    everything: ``G^{1/2}`` has the same eigenvectors (negative rounding clipped
    to 0), and so have its ridged, normalised and floored versions and their
    inverses. Unit trace by construction (kept after the ridge). For ``G = 0``
    (no weights yet) the result is ``I/K``. ``as_inverse`` as in
    :func:`covariance_update`.

    Parameters
    ----------
    G : ndarray, shape (K, K)
        ``W W^T``.
    ridge, as_inverse, floor
        See the module docstring.

    Returns
    -------
    A, Ainv : ndarray, shape (K, K)
    """
    lam, Q = sym_eigh(sym(G))
    K = G.shape[0]
    root = np.sqrt(np.maximum(lam, 0.0))
    total = float(root.sum())
    S = root / total if total > TINY else np.full(K, 1.0 / K)  # eigenvalues of G^{1/2}/tr
    S = S + ridge * max(float(S.sum()) / K, 1e-12)  # ridged() in the same eigenbasis
    S = S / S.sum()
    if as_inverse:
        S = S * float(K * K)
    S = np.maximum(S, floor * float(S.max()))
    if as_inverse:
        return assemble(Q, 1.0 / S), assemble(Q, S)
    return assemble(Q, S), assemble(Q, 1.0 / S)


def _covariance_like(
    C: np.ndarray, *, normalize: bool, as_inverse: bool, floor: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(A, A^{-1})`` from a covariance-like PD matrix, read literally or as ``A^{-1}``."""
    K = C.shape[0]
    if as_inverse:
        if normalize:
            C, _ = normalize_trace(C, float(K * K))
        Ainv, A = spd_inverse_pair(C, floor)
        return A, Ainv
    if normalize:
        C, _ = normalize_trace(C)
    return spd_inverse_pair(C, floor)
