"""The throughput benchmark's synthetic streams and its isolated measurement."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from bench.perf.throughput_ours import run_isolated
from bench.perf.throughput_streams import make_stream


def test_dense_stream_has_unit_rows_uniform_tasks_and_5_percent_noise():
    s = make_stream(10, 50, 20_000, seed=1)
    np.testing.assert_allclose(np.linalg.norm(s.X, axis=1), 1.0)
    assert set(np.unique(s.task)) == set(range(10))
    assert np.isin(s.y, (-1.0, 1.0)).all()
    clean = make_stream(10, 50, 20_000, seed=1, flip=0.0)
    flipped = (s.y != clean.y).mean()
    assert 0.04 < flipped < 0.06


def test_sparse_stream_has_80_to_120_nonzeros_in_100000_features():
    s = make_stream(4, 100_000, 500, sparse=True, seed=2)
    assert sp.issparse(s.X) and s.X.shape == (500, 100_000)
    nnz = np.diff(s.X.indptr)
    assert nnz.min() >= 80 and nnz.max() <= 120
    np.testing.assert_allclose(np.sqrt(s.X.multiply(s.X).sum(axis=1)).A.ravel(), 1.0)
    assert (s.X.data > 0).all()


def test_isolated_measurement_reports_the_online_mistakes_of_the_learner():
    s = make_stream(3, 20, 600, seed=3)
    got = run_isolated("ipl", s, 600, 30.0, "batch", [100, 600], timeout=60)
    assert got["events"] == 600 and got["queries"] == 600
    import learners

    model = learners.make("ipl", n_features=20, n_tasks=3)
    scores = model.score_and_learn_many(s.X, s.y, s.task)
    wrong = np.cumsum(np.where(scores >= 0, 1.0, -1.0) != s.y)
    assert got["mistakes"] == wrong[-1]
    assert got["mistakes_at"] == {"100": wrong[99], "600": wrong[599]}
    assert "active" in run_isolated("random-query", s, 600, 1.0, "batch", [], timeout=60)["skipped"]
