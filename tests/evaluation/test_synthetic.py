"""The synthetic generators of saha2011, zhang2018 and ruvolo2014."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.catalog import load_dataset
from evaluation.splits import TRAIN


def test_saha_tasks_are_opposite_and_uncorrelated():
    d = load_dataset("synthetic-saha")
    assert (d.n, d.n_features, d.n_tasks) == (300, 10, 3)
    W = d.true_weights
    assert W is not None
    np.testing.assert_array_equal(W[0], -W[1])
    assert abs(np.corrcoef(W)[0, 2]) < 1e-12
    for k in range(3):  # labels are sign(w_k . x)
        rows = d.task == k
        np.testing.assert_array_equal(d.y[rows], np.where(d.X[rows] @ W[k] >= 0, 1.0, -1.0))
    split = d.split_for_run(np.random.default_rng(0))
    assert int((split == TRAIN).sum()) == 200  # 200 train / 100 test over the mixed tasks


def test_generators_are_determined_by_their_seed():
    a, b = load_dataset("synthetic-rom:seed=4"), load_dataset("synthetic-rom:seed=4")
    np.testing.assert_array_equal(a.X, b.X)
    c = load_dataset("synthetic-rom:seed=5")
    assert not np.array_equal(a.X, c.X)
    assert a.name == "synthetic-rom:delta2=12.25,eps2=0.09,n=1000,seed=4"


@pytest.mark.parametrize("delta2", [0.09, 1.0, 12.25])
def test_rom_random_walk_with_an_outlier_task(delta2):
    d = load_dataset(f"synthetic-rom:delta2={delta2},n=200")
    assert (d.n, d.n_features, d.n_tasks) == (1000, 100, 5)
    W = d.true_weights
    assert W is not None
    np.testing.assert_array_equal(W[0], np.r_[np.ones(60), -1.5 * np.ones(40)])
    steps = np.linalg.norm(np.diff(W, axis=0), axis=1) ** 2 / 100  # per-coordinate variance
    assert np.all(np.abs(steps[:3] - 0.09) < 0.05)
    assert abs(steps[3] - delta2) < 0.5 * delta2
    assert d.true_outliers == [4]


def test_ella_tasks_are_sparse_combinations_of_6_components_with_a_bias_feature():
    d = load_dataset("synthetic-ella")
    assert (d.n, d.n_features, d.n_tasks, d.kind) == (10000, 13, 100, "regression")
    assert (d.X[:, 12] == 1).all()
    theta = d.true_weights
    assert theta is not None and (theta[:, 12] == 0).all()
    assert np.linalg.matrix_rank(theta[:, :12]) == 6
    residual = d.y - np.einsum("ij,ij->i", d.X, theta[d.task])
    assert abs(residual.std() - 1.0) < 0.05  # unit-variance noise
    split = d.split_for_run(np.random.default_rng(0))
    assert (np.bincount(d.task[split == TRAIN]) == 50).all()


def test_ella_generator_seed_draws_new_tasks_of_the_same_design():
    """python -m bench.papers.ruvolo_ella --regenerate draws one dataset per trial through ``seed``."""
    a, b = load_dataset("synthetic-ella:seed=3"), load_dataset("synthetic-ella:seed=4")
    assert a.name == "synthetic-ella:tasks=100,n=100,k=6,sparsity=0.5,noise=1,seed=3"
    assert a.X.shape == b.X.shape == (10000, 13)
    Wa, Wb = a.true_weights, b.true_weights
    assert Wa is not None and Wb is not None and not np.allclose(Wa, Wb)
    for W in (Wa, Wb):
        assert np.linalg.matrix_rank(W[:, :12]) == 6 and (W[:, 12] == 0).all()
    np.testing.assert_array_equal(load_dataset("synthetic-ella:seed=3").y, a.y)
