"""The ``.npz`` file format for bringing your own multitask data.

A dataset file is a NumPy ``.npz`` archive (``np.savez``/``np.savez_compressed``)
holding:

==============  ===========================  =====================================
key             shape / dtype                meaning
==============  ===========================  =====================================
``y``           (n,) float                   labels in {-1, +1} (or {0, 1}, mapped
                                             to -1/+1), or real targets
``task``        (n,) int                     task index 0 .. K-1 of every row
``X``           (n, d) float                 dense features, **or** the CSR parts:
``X_data``      (nnz,) float                 non-zero values
``X_indices``   (nnz,) int                   their column indices
``X_indptr``    (n + 1,) int                 row pointers
``X_shape``     (2,) int                     ``(n, d)``
``split``       (n,) int, optional           0 = train, 1 = test
``task_names``  (K,) str, optional           one name per task
``kind``        () str, optional             "classification" or "regression";
                                             inferred from ``y`` when absent
==============  ===========================  =====================================

Files are read with ``allow_pickle=False``: string arrays must be fixed-width
unicode (``np.array(names)`` gives that), never object arrays. Without a
``split``, the ``split`` protocol draws half of every task for training per run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from evaluation.dataset import Dataset
from evaluation.params import DatasetParams
from evaluation.splits import per_task_split

__all__ = ["load_npz", "save_npz"]


def save_npz(path: str | Path, dataset: Dataset) -> None:
    """Write ``dataset`` in the documented format (CSR parts for sparse ``X``)."""
    arrays: dict[str, np.ndarray] = {
        "y": np.asarray(dataset.y, dtype=np.float64),
        "task": np.asarray(dataset.task, dtype=np.int64),
        "task_names": np.array(dataset.task_names, dtype=str),
        "kind": np.array(dataset.kind),
    }
    if sp.issparse(dataset.X):
        csr = sp.csr_matrix(dataset.X)
        arrays.update(
            X_data=csr.data,
            X_indices=csr.indices.astype(np.int64),
            X_indptr=csr.indptr.astype(np.int64),
            X_shape=np.array(csr.shape, dtype=np.int64),
        )
    else:
        arrays["X"] = np.asarray(dataset.X, dtype=np.float64)
    if dataset.split is not None:
        arrays["split"] = np.asarray(dataset.split, dtype=np.int8)
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]


def _features(f: np.lib.npyio.NpzFile, path: Path) -> np.ndarray | sp.csr_matrix:
    if "X" in f.files:
        X = np.asarray(f["X"], dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"{path}: X must be 2-D, got shape {X.shape}")
        return X
    parts = ("X_data", "X_indices", "X_indptr", "X_shape")
    missing = [k for k in parts if k not in f.files]
    if missing:
        raise ValueError(f"{path}: needs X, or all of {', '.join(parts)} (missing {missing})")
    shape = tuple(int(v) for v in f["X_shape"])
    return sp.csr_matrix(
        (np.asarray(f["X_data"], dtype=np.float64), f["X_indices"], f["X_indptr"]), shape=shape
    )


def load_npz(path: str | Path, params: DatasetParams | None = None) -> Dataset:
    """Read a dataset file (see the module docstring); ``train=`` sets the drawn split."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"dataset file {path} not found")
    train = params.get_float("train", 0.5, positive=True) if params else 0.5
    if params:
        params.finish()
    with np.load(path, allow_pickle=False) as f:
        for key in ("y", "task"):
            if key not in f.files:
                raise ValueError(f"{path}: missing array {key!r}")
        X = _features(f, path)
        y = np.asarray(f["y"], dtype=np.float64).reshape(-1)
        task = np.asarray(f["task"])
        split = np.asarray(f["split"], dtype=np.int8) if "split" in f.files else None
        names = [str(s) for s in f["task_names"]] if "task_names" in f.files else None
        kind = str(f["kind"]) if "kind" in f.files else None
    n = y.shape[0]
    if X.shape[0] != n or task.shape != (n,):
        raise ValueError(f"{path}: X has {X.shape[0]} rows, y {n}, task {task.shape}")
    if not np.issubdtype(task.dtype, np.integer) or (n and task.min() < 0):
        raise ValueError(f"{path}: task must hold non-negative integers")
    task = task.astype(np.int64)
    n_tasks = int(task.max()) + 1 if n else 0
    if names is None:
        names = [f"task{t}" for t in range(n_tasks)]
    if len(names) < n_tasks:
        raise ValueError(f"{path}: {len(names)} task_names for {n_tasks} tasks")
    if split is not None and (split.shape != (n,) or not np.isin(split, (0, 1)).all()):
        raise ValueError(f"{path}: split must hold one 0 (train) or 1 (test) per row")
    if kind is None:
        kind = "classification" if np.isin(y, (-1.0, 0.0, 1.0)).all() else "regression"
    if kind not in ("classification", "regression"):
        raise ValueError(f"{path}: kind must be classification or regression, got {kind!r}")
    if kind == "classification":
        if not np.isin(y, (-1.0, 0.0, 1.0)).all():
            raise ValueError(f"{path}: classification labels must be -1/+1 (or 0/1)")
        y = np.where(y > 0, 1.0, -1.0)
    return Dataset(
        name=str(path),
        X=X,
        y=y,
        task=task,
        task_names=names,
        kind=kind,
        split=split,
        draw_split=None if split is not None else per_task_split(task, train),
        description=f"user data from {path}"
        + ("" if split is not None else f"; split per run: {train:g} of each task trains"),
    )
