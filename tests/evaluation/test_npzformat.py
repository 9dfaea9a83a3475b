"""The documented .npz format: round trips, CSR parts, label mapping and errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.catalog import load_dataset
from evaluation.dataset import Dataset
from evaluation.npzformat import load_npz, save_npz


def _dataset(n: int, d: int, k: int, sparse: bool, with_split: bool, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.3)
    return Dataset(
        name="t",
        X=sp.csr_matrix(X) if sparse else X,
        y=rng.choice([-1.0, 1.0], n),
        task=np.arange(n) % k,
        task_names=[f"user-{i}" for i in range(k)],
        split=(rng.random(n) < 0.3).astype(np.int8) if with_split else None,
    )


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(3, 40),
    d=st.integers(1, 8),
    k=st.integers(1, 3),
    sparse=st.booleans(),
    with_split=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_round_trip_keeps_every_field(tmp_path_factory, n, d, k, sparse, with_split, seed):
    ds = _dataset(n, d, k, sparse, with_split, seed)
    path = tmp_path_factory.mktemp("npz") / "data.npz"
    save_npz(path, ds)
    back = load_npz(path)
    assert sp.issparse(back.X) == sparse
    dense = back.X.toarray() if sp.issparse(back.X) else back.X
    original = ds.X.toarray() if sp.issparse(ds.X) else ds.X
    np.testing.assert_array_equal(dense, original)
    np.testing.assert_array_equal(back.y, ds.y)
    np.testing.assert_array_equal(back.task, ds.task)
    assert back.task_names == ds.task_names
    assert back.kind == "classification"
    if with_split:
        np.testing.assert_array_equal(back.split, ds.split)
    else:
        assert back.split is None and back.draw_split is not None


def test_minimal_file_with_01_labels_and_csr_parts(tmp_path):
    path = tmp_path / "mine.npz"
    X = sp.csr_matrix(np.array([[0, 2.0, 0], [1.0, 0, 0], [0, 0, 3.0], [4.0, 0, 5.0]]))
    np.savez(
        path,
        X_data=X.data,
        X_indices=X.indices,
        X_indptr=X.indptr,
        X_shape=np.array(X.shape),
        y=np.array([0, 1, 1, 0]),
        task=np.array([0, 0, 1, 1]),
    )
    d = load_dataset(f"{path}:train=1")
    np.testing.assert_array_equal(d.y, [-1.0, 1.0, 1.0, -1.0])
    assert d.task_names == ["task0", "task1"] and d.n_features == 3
    split = d.split_for_run(np.random.default_rng(0))
    assert sorted(np.bincount(d.task[split == 0]).tolist()) == [1, 1]  # train=1 row per task


def test_real_targets_are_read_as_regression(tmp_path):
    path = tmp_path / "reg.npz"
    np.savez(path, X=np.ones((4, 2)), y=np.array([0.5, 1.5, 2.0, 3.0]), task=np.zeros(4, int))
    assert load_npz(path).kind == "regression"


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"X": np.ones((3, 2)), "task": np.zeros(3, int)}, "missing array 'y'"),
        ({"X": np.ones((3, 2)), "y": np.ones(3), "task": np.zeros(2, int)}, "rows"),
        ({"X_data": np.ones(1), "y": np.ones(1), "task": np.zeros(1, int)}, "X_indptr"),
        ({"X": np.ones((2, 2)), "y": np.ones(2), "task": np.array([0.5, 1])}, "integers"),
        (
            {
                "X": np.ones((2, 2)),
                "y": np.ones(2),
                "task": np.zeros(2, int),
                "split": np.array([0, 3]),
            },
            "split",
        ),
    ],
)
def test_bad_files_are_rejected_with_a_reason(tmp_path, arrays, message):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=message):
        load_npz(path)


def test_object_arrays_are_refused(tmp_path):
    path = tmp_path / "pickled.npz"
    np.savez(
        path,
        X=np.ones((2, 1)),
        y=np.ones(2),
        task=np.zeros(2, int),
        task_names=np.array([{"a": 1}], dtype=object),
    )
    with pytest.raises(ValueError, match="pickle"):
        load_npz(path)
