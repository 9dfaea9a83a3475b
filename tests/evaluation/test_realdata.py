"""The loaders of the real benchmarks in OMTL_DATA: shapes, task counts, label encodings, splits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from evaluation.catalog import load_dataset
from evaluation.datapath import DataNotFoundError, data_root
from evaluation.splits import TEST, TRAIN

REPO = Path(__file__).resolve().parents[2]
HAVE_DATA = (REPO / "../shared/data/landmine/LandmineData.mat").exists()
needs_data = pytest.mark.skipif(not HAVE_DATA, reason="benchmark data ../shared/data not present")


def _pm_one(y: np.ndarray) -> bool:
    return bool(np.isin(y, (-1.0, 1.0)).all())


@needs_data
def test_landmine_has_29_tasks_of_9_features_and_904_landmines():
    d = load_dataset("landmine")
    assert (d.n, d.n_features, d.n_tasks) == (14820, 9, 29)
    assert _pm_one(d.y) and int((d.y > 0).sum()) == 904
    sizes = np.bincount(d.task)
    assert sizes.min() == 445 and sizes.max() == 690
    split = d.split_for_run(np.random.default_rng(0))
    for k in range(29):  # 50/50 within each task
        assert abs(int((split[d.task == k] == TRAIN).sum()) - sizes[k] / 2) <= 0.5


@needs_data
def test_landmine19_is_tasks_1_to_10_and_16_to_24_with_160_training_rows_each():
    d = load_dataset("landmine19")
    assert (d.n, d.n_tasks) == (9674, 19)
    assert int((d.y > 0).sum()) == 585
    assert d.task_names[9] == "region10" and d.task_names[10] == "region16"
    split = d.split_for_run(np.random.default_rng(3))
    assert (np.bincount(d.task[split == TRAIN]) == 160).all()
    assert int((split == TEST).sum()) == 9674 - 19 * 160
    other = d.split_for_run(np.random.default_rng(4))
    assert not np.array_equal(split, other)  # drawn afresh per run


@needs_data
def test_school_is_139_regression_tasks_with_the_published_splits():
    d = load_dataset("school")
    assert (d.n, d.n_features, d.n_tasks, d.kind) == (15362, 28, 139, "regression")
    assert d.y.min() == 1 and d.y.max() == 70
    assert (d.X[:, 27] == 1).all()  # the bias column
    fixed = load_dataset("school:split=1")
    assert fixed.split is not None
    assert int((fixed.split == TRAIN).sum()) == 11472 and int((fixed.split == TEST).sum()) == 3890


@needs_data
def test_tdt2_builds_20_balanced_one_vs_rest_tasks():
    d = load_dataset("tdt2")
    assert sp.issparse(d.X) and d.n_features == 36771 and d.n_tasks == 20
    assert _pm_one(d.y)
    assert int((d.y > 0).sum()) == 8741  # every document is the positive of its own topic
    for k in range(20):
        y = d.y[d.task == k]
        assert (y > 0).sum() == (y < 0).sum()
    assert int((d.y[d.task == 0] > 0).sum()) == 1844


@needs_data
def test_sentiment4_has_4_balanced_domains_with_bag_of_words_features():
    d = load_dataset("sentiment4:train=100,test=300")
    assert (d.n, d.n_tasks) == (8000, 4) and sp.issparse(d.X)
    assert d.task_names == ["books", "dvd", "electronics", "kitchen"]
    for k in range(4):
        assert int((d.y[d.task == k] > 0).sum()) == 1000
    assert d.X.nnz > 8000 * 20 and (d.X.data > 0).all()
    split = d.split_for_run(np.random.default_rng(0))
    assert (np.bincount(d.task[split == TRAIN]) == 100).all()
    assert (np.bincount(d.task[split == TEST]) == 300).all()


@needs_data
def test_spam15_has_15_inboxes_of_400_emails_half_spam():
    d = load_dataset("spam15")
    assert (d.n, d.n_tasks, d.n_features) == (6000, 15, 152543)
    assert _pm_one(d.y) and int((d.y > 0).sum()) == 3000


def test_missing_data_gives_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("OMTL_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(DataNotFoundError, match="OMTL_DATA"):
        load_dataset("landmine")
    monkeypatch.setenv("OMTL_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError, match=r"LandmineData\.mat"):
        load_dataset("landmine")


@needs_data
def test_relative_data_setting_falls_back_to_the_repository(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMTL_DATA", "../shared/data")
    assert data_root() == (REPO / "../shared/data").resolve()


def test_unknown_dataset_and_parameter_are_rejected():
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("no-such-set")
    with pytest.raises(ValueError, match="unknown parameter"):
        load_dataset("synthetic-saha:colour=blue")
    with pytest.raises(ValueError, match="key=value"):
        load_dataset("synthetic-saha:n")
