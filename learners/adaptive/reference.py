"""The numpy per-event update of the adaptive learners: the reference of the kernel.

State (docs/algorithms.md Sec. 11): for ``M`` configurations, ``K`` tasks, dimension ``D``

* ``U0`` (M, D) shared weights ``u_0`` and ``U`` (M, K, D) per-task weights ``u_k``;
* ``G0`` (M, D) and ``G`` (M, K, D): AdaGrad's sums of squared gradient
  coordinates, or AROW's diagonal variances;
* ``S`` (D,) the largest ``|x_j|`` seen per feature (VW's normaliser), and
  ``stats = [N, t]`` with ``N = sum_t sum_j (x_tj / s_j)^2`` and ``t`` the events learned;
* ``mistakes`` (M,) progressive-validation mistakes per configuration, and ``duels``
  (M, 2) its duels with the leader's prediction: ``duels[m, 0]`` counts the events m got
  wrong where the leader was right, ``duels[m, 1]`` the other way round (the evidence of
  the pruning rule, docs/algorithms.md Sec. 11.9);
* the outlier parts (docs/algorithms.md Sec. 11.7), ``q_k = Qs[m, k] * Q[m, k]`` with
  ``Qn[m, k] = ||q_k||^2``; shapes (M, K, D), (M, K), (M, K), or (M, 0, 0), (M, 0),
  (M, 0) for a learner without them.

:func:`member_scores` gives every configuration's score of ``x`` for task k;
:func:`learn` applies one labelled event to all of them, in the order the
kernel (:mod:`learners.adaptive.kernels`) follows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from learners.adaptive.configs import Configs
from learners.adaptive.steps import AROW, invariant_step, slope_terms
from learners.inputs import Vec

__all__ = ["FOLD_BELOW", "AdaptiveState", "learn", "member_scores"]

#: An outlier part's scale below this is folded into its array (O(D), rare).
FOLD_BELOW = 1e-100


@dataclass
class AdaptiveState:
    """The arrays of the module docstring (views of the learner's attributes)."""

    U0: np.ndarray
    U: np.ndarray
    G0: np.ndarray
    G: np.ndarray
    S: np.ndarray
    stats: np.ndarray
    mistakes: np.ndarray
    duels: np.ndarray
    Q: np.ndarray
    Qs: np.ndarray
    Qn: np.ndarray


def _coords(v: Vec) -> tuple[np.ndarray | slice, np.ndarray]:
    return (slice(None) if v.idx is None else v.idx), v.val


def member_scores(state: AdaptiveState, v: Vec, task: int) -> np.ndarray:
    """``p_m = <u_0^m, x> + <u_k^m, x>`` for every configuration m, shape (M,)."""
    j, val = _coords(v)
    scores = state.U0[:, j] @ val + state.U[:, task, j] @ val
    if state.Q.shape[1]:
        scores = scores + state.Qs[:, task] * (state.Q[:, task, j] @ val)
    return scores


def learn(state: AdaptiveState, configs: Configs, v: Vec, y: float, task: int) -> np.ndarray:
    """One labelled event for every configuration (docs/algorithms.md Sec. 11.2-11.4);
    returns the configurations' scores of the event before it was learned.

    An event without a non-zero feature only counts the configurations' mistakes.
    """
    j, val = _coords(v)
    scores = member_scores(state, v, task)
    x2 = val * val
    _count(state, scores, y)
    if val.shape[0] == 0:
        return scores
    # Normaliser (VW's normalized updates): s_j = max |x_j|, N += sum (x_j / s_j)^2; the
    # first-order weights of a feature whose s_j grows from s_old > 0 shrink by s_old / s_new.
    _rescale(state, configs, np.arange(state.S.shape[0])[j], np.abs(val))
    state.S[j] = np.maximum(state.S[j], np.abs(val))
    s = state.S[j]
    state.stats[0] += float(np.sum(x2 / (s * s)))
    state.stats[1] += 1.0
    scale = math.sqrt(state.stats[1] / state.stats[0])
    for m in range(configs.size):
        p = float(scores[m])
        loss = int(configs.losses[m])
        b = float(configs.couplings[m])
        z0 = y * p
        if loss == AROW:
            _arow(state, m, task, j, val, x2, y, z0, b, float(configs.ridges[m]))
            continue
        g, ez0 = slope_terms(loss, z0)
        if g == 0.0:
            continue
        eta = float(configs.etas[m])
        gamma = float(configs.outlier_gammas[m])
        g0 = state.G0[m, j] + g * g * x2
        state.G0[m, j] = g0
        rate0 = eta / (s * np.sqrt(g0))
        h = float(np.sum(x2 * rate0))
        if b > 0.0 or gamma > 0.0:
            gk = state.G[m, task, j] + g * g * x2
            state.G[m, task, j] = gk
            rateq = eta / (s * np.sqrt(gk))
            ratek = b * rateq
            h += (b + (1.0 if gamma > 0.0 else 0.0)) * float(np.sum(x2 * rateq))
        h *= scale
        if not 0.0 < h < math.inf:  # infinite: a rate overflowed (docs/algorithms.md Sec. 11.2)
            continue
        a = y * invariant_step(loss, z0, ez0, h) / h * scale
        state.U0[m, j] += (a * rate0) * val
        if b > 0.0:
            state.U[m, task, j] += (a * ratek) * val
        if gamma > 0.0:
            _outlier_step(state, m, task, j, (a * rateq) * val, eta * gamma)
    return scores


def _count(state: AdaptiveState, scores: np.ndarray, y: float) -> None:
    """Each configuration's mistake and its duel with the leader (the configuration with the
    fewest mistakes before this event, the first on ties)."""
    wrong = (scores >= 0.0) != (y > 0.0)
    lead_wrong = bool(wrong[int(np.argmin(state.mistakes))])
    state.mistakes += wrong
    split = wrong != lead_wrong
    state.duels[:, 0] += split & wrong
    state.duels[:, 1] += split & ~wrong


def _outlier_step(
    state: AdaptiveState, m: int, task: int, j: np.ndarray | slice, delta: np.ndarray, thr: float
) -> None:
    """``q_hat = q_k + delta`` on the row's coordinates, then zhang2018's group
    soft-thresholding (Eq. 10) ``q_k <- max(0, 1 - thr / ||q_hat||) q_hat`` with
    ``thr = eta gamma`` (docs/algorithms.md Sec. 11.7). O(nnz) through the scale."""
    c = float(state.Qs[m, task])
    old = c * state.Q[m, task, j]
    norm2 = float(state.Qn[m, task]) + float(np.sum(2.0 * old * delta + delta * delta))
    state.Q[m, task, j] += delta / c
    norm = math.sqrt(max(norm2, 0.0))
    if norm <= thr:
        state.Q[m, task] = 0.0
        state.Qs[m, task] = 1.0
        state.Qn[m, task] = 0.0
        return
    f = 1.0 - thr / norm
    state.Qs[m, task] = c * f
    state.Qn[m, task] = norm2 * f * f
    if state.Qs[m, task] < FOLD_BELOW:
        state.Q[m, task] *= state.Qs[m, task]
        state.Qs[m, task] = 1.0


def _rescale(state: AdaptiveState, configs: Configs, cols: np.ndarray, size: np.ndarray) -> None:
    """VW's rescaling on a growing normaliser (docs/algorithms.md Sec. 11.2, step 1)."""
    old = state.S[cols]
    grow = (size > old) & (old > 0.0)
    if not grow.any():
        return
    cols, ratio = cols[grow], old[grow] / size[grow]
    first = np.flatnonzero(configs.losses != AROW)
    state.U0[np.ix_(first, cols)] *= ratio
    tasks = np.arange(state.U.shape[1])
    state.U[np.ix_(first, tasks, cols)] *= ratio
    if state.Q.shape[1]:
        part = state.Q[np.ix_(first, tasks, cols)] * state.Qs[first][:, :, None]
        state.Qn[first] += np.sum(part * part * (ratio * ratio - 1.0), axis=2)
        state.Q[np.ix_(first, tasks, cols)] *= ratio


def _arow(
    state: AdaptiveState,
    m: int,
    task: int,
    j: np.ndarray | slice,
    val: np.ndarray,
    x2: np.ndarray,
    y: float,
    z0: float,
    b: float,
    r: float,
) -> None:
    """Diagonal AROW (Crammer, Kulesza & Dredze 2009, Fig. 1 with diagonal Sigma) on the
    shared + per-task representation (docs/algorithms.md Sec. 11.3)."""
    if z0 >= 1.0:
        return
    sig0 = state.G0[m, j]
    v = float(np.sum(x2 * sig0))
    if b > 0.0:
        sigk = state.G[m, task, j]
        v += float(np.sum(x2 * sigk))
    beta = 1.0 / (v + r)
    alpha = (1.0 - z0) * beta
    state.U0[m, j] += (alpha * y) * sig0 * val
    state.G0[m, j] = 1.0 / (1.0 / sig0 + x2 / r)
    if b > 0.0:
        state.U[m, task, j] += (alpha * y) * sigk * val
        state.G[m, task, j] = 1.0 / (1.0 / sigk + x2 / r)
