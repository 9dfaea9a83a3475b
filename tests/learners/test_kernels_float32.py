"""The linear kernels read float32 batches in place: the numbers of the float64 copy.

``CompiledLinear.score_and_learn_many`` hands a writable C-contiguous float32 batch
to the kernel without converting it (learners/perceptron/kernels.py); each value is
widened before use, so scores and weights must equal those of the float64 batch bit
for bit, and a row with NaN must still change nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

from learners.registry import make

LINEAR = ["cmtl", "ipl", "pt-global", "stl", "pa-global", "pa-individual"]


def _batch(seed: int, n: int = 400, d: int = 30, k: int = 5) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.random(size=(n, d)) < 0.3] = 0.0
    tasks = rng.integers(k, size=n).astype(np.int64)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return X, y, tasks


@pytest.mark.parametrize("name", LINEAR)
def test_a_float32_batch_gives_the_numbers_of_its_float64_copy(name: str) -> None:
    X, y, tasks = _batch(seed=len(name))
    a = make(name, n_features=X.shape[1], n_tasks=5)
    b = make(name, n_features=X.shape[1], n_tasks=5)
    for part in np.array_split(np.arange(X.shape[0]), 3):
        sa = a.score_and_learn_many(np.ascontiguousarray(X[part]), y[part], tasks[part])
        sb = b.score_and_learn_many(X[part].astype(np.float64), y[part], tasks[part])
        assert np.array_equal(sa, sb)
    wa, wb = a.task_weights(), b.task_weights()
    assert wa is not None and wb is not None
    assert np.array_equal(wa, wb)
    assert np.abs(wa).sum() > 0.0
    counter = "n_updates_" if name.startswith("pa") else "n_mistakes_"
    assert getattr(a, counter) == getattr(b, counter) > 0


@pytest.mark.parametrize("name", ["cmtl", "ipl"])
def test_a_float32_batch_with_nan_changes_nothing(name: str) -> None:
    X, y, tasks = _batch(seed=1)
    model = make(name, n_features=X.shape[1], n_tasks=5)
    model.score_and_learn_many(X[:200].copy(), y[:200], tasks[:200])
    before = model.task_weights()
    assert before is not None
    bad = X[200:].copy()
    bad[150, 4] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        model.score_and_learn_many(bad, y[200:], tasks[200:])
    after = model.task_weights()
    assert after is not None
    assert np.array_equal(before, after)
