"""Slow, obviously-correct dense references for the Perceptron family.

Everything here works in the compound space ``R^{Kd}`` of saha2011 Sec. 2:
``phi_t = e_{i_t} (x) x_t`` and ``A_(x) = A (x) I_d``, with explicit Kronecker
products and matrix inverses, one event at a time. They are meant to be read
next to the equations, not to be fast.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def compound(x: np.ndarray, task: int, n_tasks: int) -> np.ndarray:
    """``phi = e_task (x) x`` (saha2011 Sec. 2)."""
    e = np.zeros(n_tasks)
    e[task] = 1.0
    return np.kron(e, x)


def sgn(score: float) -> float:
    """SGN with SGN(0) = +1 (algorithms.md Sec. 0)."""
    return 1.0 if score >= 0.0 else -1.0


def multitask_perceptron(
    X: np.ndarray, y: np.ndarray, tasks: np.ndarray, A: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """saha2011 Eq. (2.2) in compound form: on a mistake ``w += y (A^{-1} (x) I_d) phi``.

    Returns the score of each row before it was learned and the final ``(K, d)`` weights.
    """
    K, d = A.shape[0], X.shape[1]
    P = np.kron(np.linalg.inv(A), np.eye(d))
    w = np.zeros(K * d)
    scores = np.empty(len(X))
    for n, (x, label, t) in enumerate(zip(X, y, tasks, strict=True)):
        phi = compound(x, int(t), K)
        scores[n] = w @ phi
        if sgn(scores[n]) != label:
            w = w + label * (P @ phi)
    return scores, w.reshape(K, d)


def second_order_primal(
    X: np.ndarray, y: np.ndarray, tasks: np.ndarray, A: np.ndarray, a: float
) -> tuple[np.ndarray, list[int]]:
    """algorithms.md Sec. 1.3, primal form with an explicit inverse every round.

    ``margin_t = v0^T (a A_(x) + sum_{r in M} phi_r phi_r^T + phi_t phi_t^T)^{-1} phi_t``;
    on a mistake ``v0 += y_t phi_t`` and ``phi_t`` joins the sum. Returns the margins
    and the mistaken rows.
    """
    K, d = A.shape[0], X.shape[1]
    M = a * np.kron(A, np.eye(d))
    v0 = np.zeros(K * d)
    margins = np.empty(len(X))
    mistakes = []
    for n, (x, label, t) in enumerate(zip(X, y, tasks, strict=True)):
        phi = compound(x, int(t), K)
        margins[n] = v0 @ np.linalg.solve(M + np.outer(phi, phi), phi)
        if sgn(margins[n]) != label:
            v0 = v0 + label * phi
            M = M + np.outer(phi, phi)
            mistakes.append(n)
    return margins, mistakes


def inverse_sqrt(A: np.ndarray) -> np.ndarray:
    """``A^{-1/2}`` of a symmetric positive definite matrix by eigendecomposition."""
    lam, Q = np.linalg.eigh(A)
    return (Q / np.sqrt(lam)) @ Q.T


def pnorm_perceptron(
    X: np.ndarray, y: np.ndarray, tasks: np.ndarray, A: np.ndarray, p: float
) -> tuple[np.ndarray, list[int]]:
    """algorithms.md Sec. 1.4: the p-norm Perceptron on ``z_t = A_(x)^{-1/2} phi_t``.

    ``theta = sum_M y_r z_r``; ``w = grad (1/2)||theta||_p^2``, i.e.
    ``w_i = sign(theta_i) |theta_i|^{p-1} / ||theta||_p^{p-2}``; margin ``w^T z_t``.
    Plain formula, no overflow protection (use moderate p).
    """
    K, d = A.shape[0], X.shape[1]
    R = np.kron(inverse_sqrt(A), np.eye(d))
    theta = np.zeros(K * d)
    margins = np.empty(len(X))
    mistakes = []
    for n, (x, label, t) in enumerate(zip(X, y, tasks, strict=True)):
        z = R @ compound(x, int(t), K)
        norm = np.sum(np.abs(theta) ** p) ** (1.0 / p)
        if norm == 0.0:
            w = np.zeros_like(theta)
        else:
            w = np.sign(theta) * np.abs(theta) ** (p - 1.0) / norm ** (p - 2.0)
        margins[n] = w @ z
        if sgn(margins[n]) != label:
            theta = theta + label * z
            mistakes.append(n)
    return margins, mistakes


def perceptron(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rosenblatt's Perceptron with SGN(0) = +1: scores before learning, final weights."""
    w = np.zeros(X.shape[1])
    scores = np.empty(len(X))
    for n, (x, label) in enumerate(zip(X, y, strict=True)):
        scores[n] = w @ x
        if sgn(scores[n]) != label:
            w = w + label * x
    return scores, w


def passive_aggressive(
    X: np.ndarray, y: np.ndarray, variant: str, C: float
) -> tuple[np.ndarray, np.ndarray]:
    """Crammer et al. (2006) Eqs. 7-9 on one weight vector, written out per variant."""
    w = np.zeros(X.shape[1])
    scores = np.empty(len(X))
    for n, (x, label) in enumerate(zip(X, y, strict=True)):
        scores[n] = w @ x
        loss = max(0.0, 1.0 - label * scores[n])
        sq = float(x @ x)
        if loss == 0.0 or sq == 0.0:
            continue
        if variant == "pa":
            tau = loss / sq
        elif variant == "pa1":
            tau = min(C, loss / sq)
        else:
            tau = loss / (sq + 1.0 / (2.0 * C))
        w = w + tau * label * x
    return scores, w


def noisy_stream(
    n: int, n_tasks: int, d: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Related tasks with 10% flipped labels, so that mistakes keep coming."""
    rng = np.random.default_rng(seed)
    w0 = rng.normal(size=d)
    W = w0 + 0.5 * rng.normal(size=(n_tasks, d))
    X = rng.normal(size=(n, d))
    tasks = rng.integers(n_tasks, size=n)
    y = np.where(np.einsum("ij,ij->i", X, W[tasks]) >= 0, 1.0, -1.0)
    y[rng.random(n) < 0.1] *= -1
    return X, y, tasks


def run(model: Any, X: np.ndarray, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """Test-then-train row by row through the public API; returns the scores before learning."""
    scores = np.empty(len(X))
    for n, (x, label, t) in enumerate(zip(X, y, tasks.tolist(), strict=True)):
        scores[n] = model.decision_one(x, t)
        model.learn_one(x, label, t)
    return scores
