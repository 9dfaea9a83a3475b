"""The conformance streams: drawn once per set of arguments, handed out as copies."""

from __future__ import annotations

import numpy as np

from learners.checks.streams import related_tasks


def test_a_stream_is_the_same_on_every_call_and_each_call_owns_its_arrays():
    first = related_tasks(n=200, n_tasks=3, n_features=5, seed=4)
    first.X[0, 0] = 99.0  # a caller may write into its copy
    first.y[:] = 0.0
    again = related_tasks(n=200, n_tasks=3, n_features=5, seed=4)
    assert again.X[0, 0] != 99.0 and set(again.y.tolist()) == {-1.0, 1.0}
    for a in (again.X, again.y, again.task):
        assert a.flags.writeable and a.flags.owndata
    other = related_tasks(n=200, n_tasks=3, n_features=5, seed=5)
    assert not np.array_equal(other.X, again.X)


def test_the_stream_follows_its_definition():
    """Unit rows, int64 task indices, every task drawn; regression targets are reals."""
    s = related_tasks(n=500, n_tasks=4, n_features=6, margin=0.1, seed=2)
    assert s.X.shape == (500, 6) and s.task.dtype == np.int64
    np.testing.assert_allclose(np.linalg.norm(s.X, axis=1), 1.0, rtol=1e-12)
    assert set(s.task.tolist()) == {0, 1, 2, 3}
    regression = related_tasks(n=500, n_tasks=4, n_features=6, kind="regression", seed=2)
    assert len(set(regression.y.tolist())) == 500
