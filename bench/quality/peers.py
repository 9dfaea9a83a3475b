"""Vowpal Wabbit and River on a multitask stream, online (test-then-train) or train/test.

Layouts of the task (``layout``):

* VW ``pooled``: one linear model, the task ignored;
  ``q``: task namespace ``t`` (the task id) and feature namespace ``f`` with
  ``-q tf`` (per-task copies of every feature, plus the shared linear part);
  ``copy``: the shared features in ``f`` and an explicit per-task copy in a
  namespace named after the task (shared + per-task copy of the features).
* River ``per-task``: one model per task; ``pooled``: one model;
  ``shared+task``: one model over the shared features and ``(task, feature)`` copies.

VW learns with its defaults (adaptive, normalised, invariant updates) on the
``logistic`` or ``hinge`` loss and a learning rate ``-l``; River with
``LogisticRegression(optim.SGD(lr))`` or ``Perceptron``. A score ``>= 0``
predicts +1 (ties as ours). The text lines and feature dicts of a dataset are
built once (:class:`PeerRows`) and reused by every configuration and order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.perf.throughput_peers import row_entries, vw_features
from evaluation.dataset import Dataset

__all__ = [
    "PeerConfig",
    "PeerRows",
    "make_peer",
    "river_grid",
    "run_online",
    "train_then_test",
    "vw_grid",
]

VW_LAYOUTS = ("pooled", "q", "copy")
RIVER_LAYOUTS = ("per-task", "pooled", "shared+task")
#: Bits of VW's feature hash (2^24 weights: no collisions to speak of at d = 152,543 x 2).
VW_BITS = 24


@dataclass(frozen=True)
class PeerConfig:
    """One peer configuration: ``system`` (vw, river), ``layout``, ``loss``/model, ``lr``."""

    system: str
    layout: str
    loss: str
    lr: float
    mellowness: float | None = None

    @property
    def family(self) -> str:
        """The configuration without its tuned step size (what tuning chooses within)."""
        return f"{self.system} {self.layout} {self.loss}"

    @property
    def label(self) -> str:
        """Short display name."""
        return f"{self.family} lr={self.lr:g}"

    def vw_args(self) -> str:
        """VW's command line for this configuration."""
        args = f"--quiet -b {VW_BITS} --loss_function {self.loss} -l {self.lr:g}"
        if self.layout == "q":
            args += " -q tf"
        if self.mellowness is not None:
            args += f" --active --simulation --mellowness {self.mellowness:g}"
        return args


def vw_grid(rates: tuple[float, ...]) -> list[PeerConfig]:
    """Every VW layout and loss at every learning rate."""
    return [
        PeerConfig("vw", layout, loss, lr)
        for layout in VW_LAYOUTS
        for loss in ("logistic", "hinge")
        for lr in rates
    ]


def river_grid(rates: tuple[float, ...]) -> list[PeerConfig]:
    """River logistic regression at every rate, and the Perceptron, in every layout."""
    out: list[PeerConfig] = []
    for layout in RIVER_LAYOUTS:
        out.extend(PeerConfig("river", layout, "logistic", lr) for lr in rates)
        out.append(PeerConfig("river", layout, "perceptron", 1.0))
    return out


class PeerRows:
    """A dataset's rows as VW text (without label) and River dicts, built on first use."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset
        self._feats: list[str] | None = None
        self._dicts: list[dict[Any, float]] | None = None

    def _features(self) -> list[str]:
        if self._feats is None:
            X = self.dataset.X
            self._feats = [vw_features(*row_entries(X, i)) for i in range(self.dataset.n)]
        return self._feats

    def vw_body(self, layout: str, i: int) -> str:
        """The features of row ``i`` in VW text for ``layout`` (prefix the label to learn)."""
        feats = self._features()[i]
        t = int(self.dataset.task[i])
        if layout == "q":
            return f"|t k{t} |f {feats}"
        if layout == "copy":
            return f"|f {feats} |k{t} {feats}"
        return f"|f {feats}"

    def river_dict(self, layout: str, i: int) -> dict[Any, float]:
        """Row ``i`` as a River feature dict for ``layout``."""
        if self._dicts is None:
            X = self.dataset.X
            self._dicts = [
                dict(zip(*(a.tolist() for a in row_entries(X, j)))) for j in range(self.dataset.n)
            ]
        x = self._dicts[i]
        if layout != "shared+task":
            return x
        t = int(self.dataset.task[i])
        return {**x, **{(t, j): v for j, v in x.items()}}


class _VW:
    def __init__(self, config: PeerConfig, rows: PeerRows) -> None:
        import vowpalwabbit

        self.vw = vowpalwabbit.Workspace(config.vw_args())
        self.rows = rows
        self.layout = config.layout

    def learn(self, i: int) -> tuple[float, bool]:
        """Score of row ``i`` before learning it; whether its label was used."""
        y = int(self.rows.dataset.y[i])
        ex = self.vw.parse(f"{y} {self.rows.vw_body(self.layout, i)}")
        self.vw.learn(ex)
        score = ex.get_simplelabel_prediction()
        used = ex.get_simplelabel_weight() > 0.0  # --active zeroes the weight of skipped labels
        self.vw.finish_example(ex)
        return score, used

    def score(self, i: int) -> float:
        ex = self.vw.parse(self.rows.vw_body(self.layout, i))
        score = float(self.vw.predict(ex))
        self.vw.finish_example(ex)
        return score

    def close(self) -> None:
        self.vw.finish()


class _River:
    def __init__(self, config: PeerConfig, rows: PeerRows) -> None:
        from river import linear_model, optim

        def model() -> Any:
            if config.loss == "perceptron":
                return linear_model.Perceptron()
            return linear_model.LogisticRegression(optimizer=optim.SGD(config.lr))

        self.rows = rows
        self.layout = config.layout
        n_models = rows.dataset.n_tasks if config.layout == "per-task" else 1
        self.models = [model() for _ in range(n_models)]

    def _model(self, i: int) -> Any:
        return self.models[int(self.rows.dataset.task[i]) if len(self.models) > 1 else 0]

    def learn(self, i: int) -> tuple[float, bool]:
        x, model = self.rows.river_dict(self.layout, i), self._model(i)
        score = self._score(model, x)
        model.learn_one(x, bool(self.rows.dataset.y[i] > 0))
        return score, True

    def score(self, i: int) -> float:
        return self._score(self._model(i), self.rows.river_dict(self.layout, i))

    @staticmethod
    def _score(model: Any, x: dict[Any, float]) -> float:
        proba = model.predict_proba_one(x).get(True, 0.0)
        return float(proba) - 0.5

    def close(self) -> None:
        pass


def make_peer(config: PeerConfig, rows: PeerRows) -> _VW | _River:
    """A fresh peer model for ``config``."""
    return _VW(config, rows) if config.system == "vw" else _River(config, rows)


def run_online(config: PeerConfig, rows: PeerRows, order: np.ndarray) -> np.ndarray:
    """Scores of one test-then-train pass over ``order`` (score taken before learning)."""
    peer = make_peer(config, rows)
    try:
        return np.array([peer.learn(i)[0] for i in order.tolist()])
    finally:
        peer.close()


def train_then_test(
    config: PeerConfig,
    rows: PeerRows,
    train: np.ndarray,
    test: np.ndarray,
    budgets: list[int],
) -> list[tuple[int, np.ndarray]]:
    """One pass over ``train``; (labels used, test scores) when the labels reach each budget.

    Passive configurations use every row they see, so the model at budget ``B``
    is the one trained on the first ``B`` rows (a random sample when ``train``
    is shuffled); ``--active`` ones see rows until they have queried ``B``. A
    budget the pass never reaches gets the final model and its label count.
    """
    peer = make_peer(config, rows)
    marks = sorted(set(budgets))
    found: dict[int, tuple[int, np.ndarray]] = {}
    used = 0

    def test_scores() -> np.ndarray:
        return np.array([peer.score(j) for j in test.tolist()])

    try:
        for i in train.tolist():
            if len(found) == len(marks):
                break
            used += peer.learn(i)[1]
            if used == marks[len(found)]:
                found[used] = (used, test_scores())
        final = (used, test_scores()) if len(found) < len(marks) else None
        return [found.get(b) or final for b in budgets]  # type: ignore[misc]
    finally:
        peer.close()
