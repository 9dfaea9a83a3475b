"""The relationship matrix tau: its multiplicative updates and its growth.

Two shapes of tau appear in xu2018:

* the AMLC **committee** (Algorithm 1): row k weighs *all* K tasks, the task
  itself included, and sums to 1 (the authors' code keeps the sum at K, see
  :mod:`learners.amlc.amlc`);
* the PEER **peer weights** (Murugesan & Carbonell 2017; docs/algorithms.md Sec. 3.3):
  row k weighs the K - 1 *other* tasks and sums to 1; the diagonal is 0.

Both are updated by the exponential-weights rule of xu2018 Alg. 1, line 12:
``tau_km <- tau_km exp(-C l_km / lambda)``, renormalised, with
``lambda = sum_m l_km``. Every function here returns new arrays and costs O(K)
(updates) or O(K^2) (growth).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "LOG_SPACE_RATES_ABOVE",
    "committee_update",
    "grow_committee",
    "grow_peer_weights",
    "peer_update",
    "uniform_committee",
    "uniform_peer_weights",
]


#: Rates ``C`` above which the exponential weights are computed in log space,
#: ``exp(log tau_km - C l_km / lambda - max_m (...))``: the same row once renormalised,
#: but its largest weight is 1, so no row underflows to 0 (nor its renormalisation
#: overflows). Up to this rate the plain product cannot: ``l_km / lambda <= 1``, and a
#: renormalised row's largest weight is at least ``row_sum / K`` (docs/algorithms.md
#: Sec. 3.5, "Large rates").
LOG_SPACE_RATES_ABOVE = 600.0


def uniform_committee(n_tasks: int, row_sum: float = 1.0) -> np.ndarray:
    """``tau^(0) = (row_sum / K) 1 1^T`` (xu2018 Alg. 1, line 2, for ``row_sum = 1``)."""
    return np.full((n_tasks, n_tasks), row_sum / n_tasks)


def committee_update(
    row: np.ndarray, losses: np.ndarray, C: float, row_sum: float = 1.0
) -> np.ndarray:
    """One committee row after a queried example (xu2018 Alg. 1, line 12).

    ``tau_km <- tau_km exp(-C l_km / lambda) / Z`` with ``lambda = sum_m l_km``
    and ``Z`` chosen so the row sums to ``row_sum``. The paper's formula is
    undefined when every loss is 0; then the row is returned unchanged
    (docs/algorithms.md Sec. 8, resolution #8, which is also what the authors' code
    does). Tasks with zero loss keep their weight before renormalisation. Above
    :data:`LOG_SPACE_RATES_ABOVE` the products are formed in log space, relative to the
    largest, so that the row cannot underflow to 0.
    """
    total = float(losses.sum())
    if total == 0.0:
        return row.copy()
    if C > LOG_SPACE_RATES_ABOVE:
        positive = row > 0.0
        logs = np.full(row.shape, -np.inf)
        logs[positive] = np.log(row[positive]) - C * (losses[positive] / total)
        scaled = np.where(positive, np.exp(logs - logs.max()), 0.0)
    else:
        scaled = row * np.exp(-C * (losses / total))
    return scaled * (row_sum / scaled.sum())


def grow_committee(tau: np.ndarray) -> np.ndarray:
    """Add a task to a row-stochastic committee matrix (every row sums to 1).

    The new task enters uniformly: its own row is ``1 / (K + 1)`` everywhere, and
    every existing row gives it the weight ``1 / (K + 1)`` (a uniform new column)
    while its old weights shrink by ``K / (K + 1)``, so every row still sums to 1.
    An untouched uniform committee of K tasks thus grows into the uniform
    committee of K + 1 tasks, i.e. the new task is treated as if it had been there
    from the start and never been queried.
    """
    K = tau.shape[0]
    grown = np.full((K + 1, K + 1), 1.0 / (K + 1))
    grown[:K, :K] = tau * (K / (K + 1))
    return grown


def uniform_peer_weights(n_tasks: int) -> np.ndarray:
    """PEER's initial peer weights: ``1 / (K - 1)`` off the diagonal, 0 on it."""
    if n_tasks == 1:
        return np.zeros((1, 1))
    tau = np.full((n_tasks, n_tasks), 1.0 / (n_tasks - 1))
    np.fill_diagonal(tau, 0.0)
    return tau


def peer_update(row: np.ndarray, losses: np.ndarray, task: int) -> np.ndarray:
    """PEER's peer-weight update on a queried mistake (docs/algorithms.md Sec. 3.3, step 4).

    Over the peers ``m != task``: ``tau_km <- tau_km exp(-l_km / lambda)`` with
    ``lambda = sum_{m != k} l_km`` (``lambda = 1`` when that sum is 0, as in
    Murugesan's code), then renormalised over the peers. The diagonal stays 0.
    """
    peers = np.arange(row.shape[0]) != task
    if not peers.any():
        return row.copy()
    total = float(losses[peers].sum())
    lam = total if total != 0.0 else 1.0
    out = np.zeros_like(row)
    scaled = row[peers] * np.exp(-losses[peers] / lam)
    out[peers] = scaled / scaled.sum()
    return out


def grow_peer_weights(tau: np.ndarray) -> np.ndarray:
    """Add a task to PEER's peer weights (rows over the K - 1 peers, zero diagonal).

    The new task's row is uniform over its K peers (``1 / K`` each); every old
    row gives it ``1 / K`` and shrinks its old peer weights by ``(K - 1) / K`` so
    that it still sums to 1. A single task has no peers; the second one then gets
    weight 1 from it.
    """
    K = tau.shape[0]
    grown = np.full((K + 1, K + 1), 1.0 / K)
    grown[:K, :K] = tau * ((K - 1) / K)
    np.fill_diagonal(grown, 0.0)
    return grown
