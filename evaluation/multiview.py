"""Multiview data: every round shows K instances (views) and one label.

The learners of cavallanti2010 Secs. 6-7 (``mmperc``, ``matrix-pnorm`` and the
baselines, :mod:`learners.multiview`) read rounds of K views (docs/algorithms.md
Sec. 0, protocol type 2). :class:`MultiviewDataset` holds such data; the
built-in sets, by name (``NAME[:key=value,...]`` as for :mod:`evaluation.catalog`):

* ``multiview-shared`` — one label per round, K views of dimension d whose
  reference vectors ``u_j`` are close to each other (``spread``); the setting of
  the 2p-norm matrix Perceptron (Sec. 7), which gains when ``U = [u_1..u_K]`` is
  near low rank;
* ``multiview-tasks`` — K tasks in spaces of different dimensions whose margins
  are correlated (``margin_spread``); the setting of MMPERC (Sec. 6), which
  gains when the margins of the tasks agree (Eq. 15 small);
* ``landmine-views`` — real data: the landmine items (docs/algorithms.md
  Sec. 1.5 "data") seen through their three feature groups, moment-based (4),
  correlation-based (3) and energy ratio + spatial variance (2), one label
  (landmine or clutter). Read from ``OMTL_DATA`` at run time, never copied.

Generators take ``seed`` so that a name with its parameters always denotes the
same data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.io as sio

from evaluation.datapath import data_file
from evaluation.params import DatasetParams, parse_spec

__all__ = [
    "MULTIVIEW_DATASETS",
    "MultiviewDataset",
    "landmine_views",
    "load_multiview",
    "multiview_shared",
    "multiview_tasks",
]


@dataclass
class MultiviewDataset:
    """Rounds of K views: ``views[j][r]`` is view j of round r, ``y[r]`` its label.

    Attributes
    ----------
    name : str
        Name with parameters, e.g. ``"multiview-shared:n=3000,K=8,..."``.
    views : list of ndarray
        K float64 matrices, view j of shape ``(n, d_j)``.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    task : ndarray of int64, shape (n,)
        The task ``i_t`` of every round (whose label ``y`` is; with a shared label
        all tasks have it, and ``task`` only tells MMPERC which view to score).
    view_names : list of str
        One name per view/task.
    shared_label : bool
        True when the label belongs to every view (Sec. 7), False when it is task
        ``i_t``'s only (Sec. 6).
    description : str
        Where the data comes from.
    true_weights : list of ndarray, or None
        The generating reference vector of every view (synthetic sets).
    """

    name: str
    views: list[np.ndarray]
    y: np.ndarray
    task: np.ndarray
    view_names: list[str]
    shared_label: bool = True
    description: str = ""
    true_weights: list[np.ndarray] | None = field(default=None, repr=False)

    @property
    def n(self) -> int:
        """Number of rounds."""
        return int(self.y.shape[0])

    @property
    def kind(self) -> str:
        """The label kind: multiview rounds are labelled -1/+1."""
        return "classification"

    @property
    def n_tasks(self) -> int:
        """K, the number of views/tasks."""
        return len(self.views)

    @property
    def view_dims(self) -> list[int]:
        """``d_j`` of every view."""
        return [int(v.shape[1]) for v in self.views]

    @property
    def uniform(self) -> bool:
        """Whether every view has the same dimension."""
        return len(set(self.view_dims)) == 1

    def padded(self) -> MultiviewDataset:
        """The same rounds with every view zero-padded to the largest ``d_j``.

        Padding leaves every inner product unchanged; it lets learners that need
        equal dimensions (the matrix Perceptron) read heterogeneous views.
        """
        d = max(self.view_dims)
        views = [np.hstack([v, np.zeros((v.shape[0], d - v.shape[1]))]) for v in self.views]
        return replace(self, views=views, name=f"{self.name} (padded to d={d})")

    def rounds(self, order: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """The views, labels and tasks of the rounds ``order``."""
        return [v[order] for v in self.views], self.y[order], self.task[order]


# ------------------------------------------------------------------ helpers
def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _orthogonal_unit(rng: np.random.Generator, n: int, u: np.ndarray) -> np.ndarray:
    """n random unit vectors orthogonal to the unit vector ``u`` (zeros when d = 1)."""
    x = rng.standard_normal((n, u.shape[0]))
    x -= np.outer(x @ u, u)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 1e-12)


def _name(base: str, **params: float) -> str:
    return base + ":" + ",".join(f"{k}={v:g}" for k, v in params.items())


# ------------------------------------------------------------------ generators
def multiview_shared(p: DatasetParams) -> MultiviewDataset:
    """K views of dimension d, one label; reference vectors ``u_j`` close to each other.

    ``u_j = normalize(u_0 + spread * g_j)`` with ``u_0, g_j`` random unit vectors
    (``spread = 0``: one vector, ``U`` of rank 1, the case where Theorem 10 with
    ``p ~ ln min(d, K)`` improves on the Frobenius bound by up to a factor K;
    large ``spread``: unrelated views). Each round draws ``y = +-1``, then every
    view uniformly on the unit sphere, reflected through its hyperplane when on
    the wrong side, and redrawn while its margin ``y u_j^T x_j`` is below
    ``margin``. ``noise`` flips that fraction of the labels after the fact.
    Parameters (defaults): n (3000), K (8), d (20), spread (0.5), margin (0.02),
    noise (0), seed (0).
    """
    n = p.get_int("n", 3000, minimum=1)
    K = p.get_int("K", 8, minimum=1)
    d = p.get_int("d", 20, minimum=1)
    spread = p.get_float("spread", 0.5)
    margin = p.get_float("margin", 0.02)
    noise = p.get_float("noise", 0.0)
    seed = p.get_int("seed", 0, minimum=0)
    p.finish()
    if not 0.0 <= margin < 1.0 or not 0.0 <= noise < 0.5 or spread < 0:
        raise ValueError("multiview-shared needs 0 <= margin < 1, 0 <= noise < 0.5, spread >= 0")
    rng = np.random.default_rng(seed)
    u0 = _unit(rng, 1, d)[0]
    U = u0 + spread * _unit(rng, K, d)
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    views = []
    for j in range(K):
        X = np.empty((n, d))
        todo = np.arange(n)
        while todo.size:
            draw = _unit(rng, todo.size, d)
            m = draw @ U[j]
            wrong = m * y[todo] < 0
            draw[wrong] -= 2 * m[wrong, None] * U[j]
            ok = np.abs(m) >= margin
            X[todo[ok]] = draw[ok]
            todo = todo[~ok]
        views.append(X)
    flips = rng.random(n) < noise
    y_obs = np.where(flips, -y, y)
    return MultiviewDataset(
        name=_name(
            "multiview-shared", n=n, K=K, d=d, spread=spread, margin=margin, noise=noise, seed=seed
        ),
        views=views,
        y=y_obs,
        task=rng.integers(K, size=n).astype(np.int64),
        view_names=[f"view{j}" for j in range(K)],
        shared_label=True,
        description=(
            f"Synthetic multiview rounds: {K} unit views in R^{d}, one label, reference vectors "
            f"u_j = normalize(u_0 + {spread:g} g_j), per-view margin >= {margin:g}, "
            f"{noise:g} of the labels flipped."
        ),
        true_weights=[U[j].copy() for j in range(K)],
    )


def multiview_tasks(p: DatasetParams) -> MultiviewDataset:
    """K tasks in spaces of different dimensions whose margins are correlated (MMPERC, Sec. 6).

    Task j lives in ``R^{d_j}`` (``d_j`` evenly from ``d_min`` to ``d_max``) with a
    random unit reference vector ``u_j``. Each round draws a common margin
    ``m ~ U[-0.5, 0.5]`` and every task's margin ``m_j = clip(m + margin_spread * N(0, 1), -1, 1)``;
    view j is ``x_j = m_j u_j + sqrt(1 - m_j^2) n_j`` (``n_j`` a random unit vector
    orthogonal to ``u_j``), so ``u_j^T x_j = m_j``. The round's task ``i_t`` is uniform
    and its label ``SGN(m_{i_t})``; rounds with ``|m_{i_t}| < margin`` are redrawn.
    ``margin_spread = 0`` makes every task's margin equal (the margin deviation of
    Eq. 15 vanishes: MMPERC's best case); large values make the tasks unrelated.
    Parameters (defaults): n (3000), K (6), d_min (5), d_max (30), margin_spread (0.1),
    margin (0.02), noise (0), seed (0).
    """
    n = p.get_int("n", 3000, minimum=1)
    K = p.get_int("K", 6, minimum=1)
    d_min = p.get_int("d_min", 5, minimum=2)
    d_max = p.get_int("d_max", 30, minimum=2)
    spread = p.get_float("margin_spread", 0.1)
    margin = p.get_float("margin", 0.02)
    noise = p.get_float("noise", 0.0)
    seed = p.get_int("seed", 0, minimum=0)
    p.finish()
    if d_max < d_min or not 0.0 <= margin < 0.5 or spread < 0 or not 0.0 <= noise < 0.5:
        raise ValueError(
            "multiview-tasks needs d_min <= d_max, 0 <= margin < 0.5, margin_spread >= 0, "
            "0 <= noise < 0.5"
        )
    rng = np.random.default_rng(seed)
    dims = [round(float(v)) for v in np.linspace(d_min, d_max, K)]
    U = [_unit(rng, 1, d)[0] for d in dims]
    task = rng.integers(K, size=n).astype(np.int64)
    M = np.empty((n, K))
    todo = np.arange(n)
    while todo.size:
        common = rng.uniform(-0.5, 0.5, size=(todo.size, 1))
        m = np.clip(common + spread * rng.standard_normal((todo.size, K)), -1.0, 1.0)
        ok = np.abs(m[np.arange(todo.size), task[todo]]) >= margin
        M[todo[ok]] = m[ok]
        todo = todo[~ok]
    views = [
        M[:, j, None] * U[j] + np.sqrt(1 - M[:, j] ** 2)[:, None] * _orthogonal_unit(rng, n, U[j])
        for j in range(K)
    ]
    y = np.where(M[np.arange(n), task] >= 0, 1.0, -1.0)
    y = np.where(rng.random(n) < noise, -y, y)
    return MultiviewDataset(
        name=_name(
            "multiview-tasks",
            n=n,
            K=K,
            d_min=d_min,
            d_max=d_max,
            margin_spread=spread,
            margin=margin,
            noise=noise,
            seed=seed,
        ),
        views=views,
        y=y,
        task=task,
        view_names=[f"task{j}" for j in range(K)],
        shared_label=False,
        description=(
            f"Synthetic heterogeneous tasks (MMPERC setting): {K} tasks of dimensions {dims}, "
            f"margins m_j = common + {spread:g} N(0, 1), label of the round's task, "
            f"margin >= {margin:g}, {noise:g} flipped."
        ),
        true_weights=U,
    )


#: The landmine feature groups (README of the data: 4 moment-based, 3 correlation-based,
#: 1 energy-ratio, 1 spatial-variance feature).
LANDMINE_GROUPS = {"moments": (0, 1, 2, 3), "correlations": (4, 5, 6), "energy_spatial": (7, 8)}


def landmine_views(p: DatasetParams) -> MultiviewDataset:
    """Landmine items (Xue et al. 2007) seen through their three feature groups, one label.

    Every item of the 29 regions (14,820; ``regions=19`` for AMLC's 19-task subset)
    becomes a round of K = 3 views: the 4 moment-based, the 3 correlation-based and
    the 2 energy-ratio/spatial-variance features, each standardised over all items
    (z-scores; the raw ranges differ by orders of magnitude). The label is the
    item's (+1 landmine, 6.1 %). The round's task ``i_t`` is drawn uniformly
    (``seed``) so that MMPERC scores every view in turn. Parameters: regions (29),
    seed (0).
    """
    regions = p.get_int("regions", 29, minimum=19)
    seed = p.get_int("seed", 0, minimum=0)
    p.finish()
    if regions not in (19, 29):
        raise ValueError("landmine-views: regions must be 19 or 29")
    mat = sio.loadmat(data_file("landmine", "LandmineData.mat"))
    chosen = list(range(1, 30)) if regions == 29 else [*range(1, 11), *range(16, 25)]
    X = np.vstack([np.asarray(mat["feature"][0][t - 1], dtype=np.float64) for t in chosen])
    labels = np.concatenate(
        [np.asarray(mat["label"][0][t - 1], dtype=np.float64).reshape(-1) for t in chosen]
    )
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    return MultiviewDataset(
        name=_name("landmine-views", regions=regions, seed=seed),
        views=[X[:, list(cols)] for cols in LANDMINE_GROUPS.values()],
        y=2.0 * labels - 1.0,
        task=rng.integers(len(LANDMINE_GROUPS), size=n).astype(np.int64),
        view_names=list(LANDMINE_GROUPS),
        shared_label=True,
        description=(
            f"Landmine detection (Xue et al. 2007), {regions} regions, {n} items; views: "
            "moment-based (4), correlation-based (3), energy ratio + spatial variance (2) "
            "features, z-scored; label +1 = landmine (6.1 %)."
        ),
    )


MULTIVIEW_DATASETS: dict[str, Callable[[DatasetParams], MultiviewDataset]] = {
    "multiview-shared": multiview_shared,
    "multiview-tasks": multiview_tasks,
    "landmine-views": landmine_views,
}


def load_multiview(spec: str) -> MultiviewDataset:
    """Load the multiview set ``NAME[:key=value,...]``."""
    name, raw = parse_spec(spec)
    loader = MULTIVIEW_DATASETS.get(name)
    if loader is None:
        raise ValueError(
            f"unknown multiview dataset {name!r}; built-in: {', '.join(sorted(MULTIVIEW_DATASETS))}"
        )
    return loader(DatasetParams(name, raw))
