"""Generators for the papers' synthetic multitask sets.

Every generator takes ``seed`` (default 0) so that a dataset name with its
parameters always denotes the same data; the per-run shuffles and splits come
from ``--seed`` instead.
"""

from __future__ import annotations

import numpy as np

from evaluation.dataset import Dataset
from evaluation.params import DatasetParams
from evaluation.splits import per_task_split, pooled_split

__all__ = ["synthetic_ella", "synthetic_rom", "synthetic_saha"]


def synthetic_saha(p: DatasetParams) -> Dataset:
    """saha2011 Sec. 5.1: 3 tasks in R^10 with ``w1 = -w2`` and ``w3`` uncorrelated.

    ``w1, w3 ~ N(0, I)``; ``w3`` is then made exactly uncorrelated with ``w1`` (its
    centred part is orthogonalised against ``w1``'s, so ``corrcoef(w1, w3) = 0``,
    the sense of saha2011 Table 2). ``x ~ N(0, I)`` (unstated in the paper,
    docs/algorithms.md Sec. 2.9), ``y = SGN(w^T x)``, ``n`` points per task (100).
    Split per run: the 3n points are mixed in random task order and ``train``
    of them (default 2n = 200) train, the rest (100) test.
    """
    n = p.get_int("n", 100, minimum=2)
    d = p.get_int("d", 10, minimum=2)
    seed = p.get_int("seed", 0, minimum=0)
    train = p.get_float("train", 2 * n, positive=True)
    p.finish()
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal(d)
    w3 = rng.standard_normal(d)
    c1, c3 = w1 - w1.mean(), w3 - w3.mean()
    w3 = c3 - (c3 @ c1) / (c1 @ c1) * c1
    weights = np.vstack([w1, -w1, w3])
    X = rng.standard_normal((3 * n, d))
    task = np.repeat(np.arange(3, dtype=np.int64), n)
    y = np.einsum("ij,ij->i", X, weights[task])
    y = np.where(y >= 0.0, 1.0, -1.0)
    return Dataset(
        name=_name("synthetic-saha", n=n, d=d, seed=seed),
        X=X,
        y=y,
        task=task,
        task_names=["task1", "task2", "task3"],
        draw_split=pooled_split(3 * n, train),
        description=(
            f"saha2011 Synthetic: 3 tasks in R^{d}, w1 = -w2, w3 uncorrelated, {n} points per "
            f"task, x ~ N(0, I), y = sign(w.x). Split per run: {train:g} of the {3 * n} points "
            "train (random task order), the rest test."
        ),
        true_weights=weights,
    )


def synthetic_rom(p: DatasetParams) -> Dataset:
    """zhang2018 Sec. IV-B (following COML): 5 tasks in R^100 by a random walk.

    ``w1 = [1 x 60, -1.5 x 40]``, ``w_i = w_{i-1} + eps`` with ``eps ~ N(0, eps2 I)``
    (``eps2`` = 0.09) for i = 2..4, and the outlier ``w5 = w4 + mu``,
    ``mu ~ N(0, delta2 I)``, ``delta2`` in {0.09, 1.00, 12.25} (default 12.25).
    ``x ~ N(0, I)``, ``y = SGN(w^T x)``, ``n`` = 1000 points per task (unstated in
    the paper: docs/algorithms.md Sec. 5.5). Split per run: half of each task trains.
    """
    delta2 = p.get_float("delta2", 12.25, positive=True)
    eps2 = p.get_float("eps2", 0.09, positive=True)
    n = p.get_int("n", 1000, minimum=2)
    seed = p.get_int("seed", 0, minimum=0)
    train = p.get_float("train", 0.5, positive=True)
    p.finish()
    rng = np.random.default_rng(seed)
    d, K = 100, 5
    weights = np.empty((K, d))
    weights[0] = np.concatenate([np.ones(60), -1.5 * np.ones(40)])
    for i in range(1, K - 1):
        weights[i] = weights[i - 1] + rng.normal(0.0, np.sqrt(eps2), d)
    weights[K - 1] = weights[K - 2] + rng.normal(0.0, np.sqrt(delta2), d)
    task = np.repeat(np.arange(K, dtype=np.int64), n)
    X = rng.standard_normal((K * n, d))
    y = np.where(np.einsum("ij,ij->i", X, weights[task]) >= 0.0, 1.0, -1.0)
    return Dataset(
        name=_name("synthetic-rom", delta2=delta2, eps2=eps2, n=n, seed=seed),
        X=X,
        y=y,
        task=task,
        task_names=[f"task{i + 1}" for i in range(K)],
        draw_split=per_task_split(task, train),
        description=(
            f"zhang2018 synthetic: 5 tasks in R^100 by a random walk (eps^2 = {eps2:g}), task 5 "
            f"an outlier with delta^2 = {delta2:g}; {n} points per task, x ~ N(0, I), "
            f"y = sign(w.x). Split per run: {train:g} of each task trains."
        ),
        true_weights=weights,
        true_outliers=[K - 1],
    )


def synthetic_ella(p: DatasetParams) -> Dataset:
    """ruvolo2014 Sec. 5: 100 regression tasks, d = 13 (12 + bias), k = 6 latent components.

    ``L`` (12 x k) ~ N(0, 1); each task's code ``s`` has ``round(sparsity * k)``
    non-zero N(0, 1) entries at random positions (sparsity 0.5 -> half the
    components); ``theta = L s``; ``X ~ N(0, I)`` with a bias 1 appended as the
    13th feature (its weight is 0); ``y = X theta + N(0, noise^2)`` (noise 1).
    ``n`` = 100 rows per task. Split per run: half of each task trains
    (ruvolo2014's 50/50 per task, docs/algorithms.md Sec. 4.9).
    """
    tasks = p.get_int("tasks", 100, minimum=1)
    n = p.get_int("n", 100, minimum=2)
    k = p.get_int("k", 6, minimum=1)
    sparsity = p.get_float("sparsity", 0.5, positive=True)
    noise = p.get_float("noise", 1.0)
    seed = p.get_int("seed", 0, minimum=0)
    train = p.get_float("train", 0.5, positive=True)
    p.finish()
    if sparsity > 1:
        raise ValueError("dataset 'synthetic-ella': sparsity must lie in (0, 1]")
    rng = np.random.default_rng(seed)
    d = 12
    L = rng.standard_normal((d, k))
    active = max(1, round(sparsity * k))
    S = np.zeros((tasks, k))
    for t in range(tasks):
        S[t, rng.choice(k, size=active, replace=False)] = rng.standard_normal(active)
    theta = S @ L.T
    task = np.repeat(np.arange(tasks, dtype=np.int64), n)
    X = np.hstack([rng.standard_normal((tasks * n, d)), np.ones((tasks * n, 1))])
    y = np.einsum("ij,ij->i", X[:, :d], theta[task]) + noise * rng.standard_normal(tasks * n)
    return Dataset(
        name=_name(
            "synthetic-ella", tasks=tasks, n=n, k=k, sparsity=sparsity, noise=noise, seed=seed
        ),
        X=X,
        y=y,
        task=task,
        task_names=[f"task{t + 1}" for t in range(tasks)],
        kind="regression",
        draw_split=per_task_split(task, train),
        description=(
            f"ruvolo2014 synthetic regression: {tasks} tasks, d = 13 (12 + bias), theta = L s with "
            f"k = {k} latent components, sparsity {sparsity:g}, {n} rows per task, noise sd "
            f"{noise:g}. Split per run: {train:g} of each task trains."
        ),
        true_weights=np.hstack([theta, np.zeros((tasks, 1))]),
    )


def _name(base: str, **params: float) -> str:
    """The canonical dataset name with its parameters (``base:k=v,...``)."""
    return base + ":" + ",".join(f"{k}={v:g}" for k, v in params.items())
