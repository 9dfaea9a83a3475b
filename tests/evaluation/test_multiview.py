"""Multiview data (evaluation.multiview) and the multiview protocol (evaluation.protocols.multiview)."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from evaluation import protocols
from evaluation.datapath import DataNotFoundError, data_file
from evaluation.multiview import MultiviewDataset, load_multiview
from evaluation.protocols import multiview as protocol


def _have_landmine() -> bool:
    try:
        data_file("landmine", "LandmineData.mat")
    except DataNotFoundError:
        return False
    return True


needs_data = pytest.mark.skipif(
    not _have_landmine(), reason="benchmark data not found (OMTL_DATA or ../shared/data)"
)


def test_shared_views_are_unit_vectors_on_the_labels_side_with_the_margin():
    ds = load_multiview("multiview-shared:n=500,K=5,d=8,spread=0.3,margin=0.05,seed=2")
    assert (ds.n, ds.n_tasks, ds.view_dims, ds.shared_label) == (500, 5, [8] * 5, True)
    assert ds.true_weights is not None
    for view, u in zip(ds.views, ds.true_weights, strict=True):
        np.testing.assert_allclose(np.linalg.norm(view, axis=1), 1.0, atol=1e-12)
        assert np.all(ds.y * (view @ u) >= 0.05)
    assert set(np.unique(ds.task)) == set(range(5))
    again = load_multiview("multiview-shared:n=500,K=5,d=8,spread=0.3,margin=0.05,seed=2")
    assert all(np.array_equal(a, b) for a, b in zip(ds.views, again.views, strict=True))


def test_shared_spread_zero_gives_one_reference_vector_and_noise_flips_labels():
    ds = load_multiview("multiview-shared:n=2000,K=4,d=6,spread=0,noise=0.1")
    U = np.array(ds.true_weights)
    np.testing.assert_allclose(U, np.repeat(U[:1], 4, axis=0), atol=1e-15)
    agree = np.sign(ds.views[0] @ U[0]) == ds.y
    assert 0.85 < agree.mean() < 0.95


def test_task_views_have_their_dimensions_and_the_drawn_margins():
    ds = load_multiview("multiview-tasks:n=800,K=4,d_min=3,d_max=12,margin_spread=0,margin=0.05")
    assert ds.view_dims == [3, 6, 9, 12]
    assert not ds.shared_label and not ds.uniform
    U = ds.true_weights
    assert U is not None
    margins = np.column_stack([v @ u for v, u in zip(ds.views, U, strict=True)])
    np.testing.assert_allclose(margins, np.repeat(margins[:, :1], 4, axis=1), atol=1e-12)
    own = margins[np.arange(ds.n), ds.task]
    assert np.all(np.abs(own) >= 0.05)
    np.testing.assert_array_equal(ds.y, np.where(own >= 0, 1.0, -1.0))
    for view in ds.views:
        np.testing.assert_allclose(np.linalg.norm(view, axis=1), 1.0, atol=1e-12)


def test_padding_keeps_every_inner_product():
    ds = load_multiview("multiview-tasks:n=50,K=3,d_min=2,d_max=5")
    padded = ds.padded()
    assert padded.view_dims == [5, 5, 5]
    for a, b in zip(ds.views, padded.views, strict=True):
        np.testing.assert_allclose(a @ a.T, b @ b.T, rtol=1e-12, atol=1e-12)


def test_unknown_names_and_parameters_are_errors():
    with pytest.raises(ValueError, match="unknown multiview dataset"):
        load_multiview("multiview-nothing")
    with pytest.raises(ValueError, match="spred"):
        load_multiview("multiview-shared:spred=1")
    with pytest.raises(ValueError, match="margin"):
        load_multiview("multiview-tasks:margin=0.7")


@needs_data
def test_landmine_views_are_the_three_feature_groups_of_every_item():
    ds = load_multiview("landmine-views")
    assert (ds.n, ds.view_dims, ds.n_tasks) == (14820, [4, 3, 2], 3)
    assert int((ds.y > 0).sum()) == 904
    X = np.hstack(ds.views)
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(X.std(axis=0), 1.0, atol=1e-10)
    assert load_multiview("landmine-views:regions=19").n == 9674


def test_protocol_counts_the_mistakes_of_the_plain_loop():
    ds = load_multiview("multiview-tasks:n=600,K=3,d_min=3,d_max=6,margin_spread=0.1")
    doc = protocol.run(ds, "mmperc", {"b": 2.0}, runs=2, seed=4, budget=None)
    assert doc["protocol"] == "multiview" and doc["view_dims"] == [3, 4, 6]
    mistakes = _plain_loop(ds, "mmperc", {"b": 2.0}, runs=2, seed=4)
    assert min(mistakes) > 0
    assert doc["metrics"]["mistakes_mean"] == pytest.approx(np.mean(mistakes))
    per_task = sum(row["mistakes_mean"] for row in doc["per_task"])
    assert per_task == pytest.approx(doc["metrics"]["mistakes_mean"])
    assert doc["metrics"]["queries_mean"] == 600
    curve = doc["curve"]["mistake_rate_mean"]
    assert curve[-1] == pytest.approx(doc["metrics"]["mistake_rate_mean"])


def _plain_loop(ds: MultiviewDataset, name: str, params: dict, runs: int, seed: int) -> list[int]:
    """The protocol restated round by round with the public contract."""
    from evaluation.common import learner_seed, run_rng

    out = []
    for r in range(runs):
        order = run_rng(seed, r).permutation(ds.n)
        model = learners.make(
            name,
            n_features=1,
            n_tasks=ds.n_tasks,
            seed=learner_seed(seed, r),
            task_dims=ds.view_dims,
            **params,
        )
        views, y, task = ds.rounds(order)
        wrong = 0
        for i in range(ds.n):
            score = model.score_and_learn_views([v[i] for v in views], y[i], int(task[i]))
            wrong += (score >= 0) != (y[i] > 0)
        out.append(wrong)
    return out


def test_protocol_pads_heterogeneous_views_for_the_matrix_perceptron():
    ds = load_multiview("multiview-tasks:n=300,K=3,d_min=2,d_max=4")
    doc = protocol.run(ds, "matrix-pnorm", {"p": 2}, runs=1, seed=0, budget=None)
    assert doc["metrics"]["mistakes_mean"] > 0
    assert len(doc["weight_correlation"]) == 3
    model, data = protocol.build(ds, "matrix-pnorm", {}, seed=0)
    assert data.view_dims == [4, 4, 4] and model.n_features == 4


def test_related_views_favour_the_coupled_learners():
    """Equal margins across tasks: MMPERC makes fewer mistakes than independent Perceptrons."""
    ds = load_multiview("multiview-tasks:n=2000,K=5,margin_spread=0")
    mm = protocol.run(ds, "mmperc", {}, runs=2, seed=0, budget=None)
    ind = protocol.run(
        ds, "multiview-independent", {"labels": "per_task"}, runs=2, seed=0, budget=None
    )
    assert mm["metrics"]["mistakes_mean"] < 0.7 * ind["metrics"]["mistakes_mean"]


def test_protocol_rejects_plain_datasets_interleaved_learners_and_budgets():
    ds = load_multiview("multiview-shared:n=20,K=2,d=3")
    assert protocols.get("multiview") is protocol
    with pytest.raises(ValueError, match="multiview dataset"):
        protocol.run(object(), "mmperc", {}, runs=1, seed=0, budget=None)
    with pytest.raises(ValueError, match="multiview rounds"):
        protocol.run(ds, "ipl", {}, runs=1, seed=0, budget=None)
    with pytest.raises(ValueError, match="passive"):
        protocol.run(ds, "mmperc", {}, runs=1, seed=0, budget=5)
