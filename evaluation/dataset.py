"""The in-memory dataset every loader and generator returns, and every protocol consumes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["Dataset"]

SplitDrawer = Callable[[np.random.Generator], np.ndarray]


@dataclass
class Dataset:
    """A multitask dataset.

    Attributes
    ----------
    name : str
        Registry name with its parameters, e.g. ``"synthetic-rom:delta2=12.25"``.
    X : ndarray of shape (n, d) or scipy CSR matrix
        Features (float64).
    y : ndarray of shape (n,)
        Labels in {-1, +1} for classification, real targets for regression.
    task : ndarray of int64, shape (n,)
        Task index of every row, in ``0 .. n_tasks - 1``.
    task_names : list of str
        One name per task.
    kind : str
        ``"classification"`` or ``"regression"``.
    split : ndarray of int8, shape (n,), or None
        Fixed split (0 train, 1 test), if the data comes with one.
    draw_split : callable or None
        Draws the paper's split afresh for one run from a generator (used when
        ``split`` is None); returns an int8 array like ``split``.
    description : str
        Where the data comes from and which split the papers use.
    true_weights : ndarray of shape (n_tasks, d), or None
        The generating task weight vectors of a synthetic set.
    true_outliers : list of int, or None
        The 0-based indices of the tasks a synthetic set makes outliers.
    """

    name: str
    X: np.ndarray | sp.csr_matrix
    y: np.ndarray
    task: np.ndarray
    task_names: list[str]
    kind: str = "classification"
    split: np.ndarray | None = None
    draw_split: SplitDrawer | None = field(default=None, repr=False)
    description: str = ""
    true_weights: np.ndarray | None = field(default=None, repr=False)
    true_outliers: list[int] | None = None

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.y.shape[0])

    @property
    def n_tasks(self) -> int:
        """Number of tasks."""
        return len(self.task_names)

    @property
    def n_features(self) -> int:
        """Feature dimension."""
        return int(self.X.shape[1])

    def split_for_run(self, rng: np.random.Generator) -> np.ndarray:
        """The train/test split of one run: the fixed one, or a fresh draw of the paper's."""
        if self.split is not None:
            return self.split
        if self.draw_split is None:
            raise ValueError(f"dataset {self.name!r} has no split and no split rule")
        return self.draw_split(rng)
