"""The lean batch path of the linear kernels: arrays straight to one checked kernel call.

``CompiledLinear.score_and_learn_many`` hands a batch of the kernel's array types
to ``learn_dense_checked`` (learners/perceptron/kernels.py), which checks labels,
task indices and (for small batches) finiteness in the same call. A writable
C-contiguous float32 batch is read without conversion; each value is widened before
use, so scores and weights must equal those of the float64 batch bit for bit. Input
a check refuses must give the general validation's error and change nothing.
"""

from __future__ import annotations

from collections.abc import Callable

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


@pytest.mark.parametrize("name", LINEAR)
def test_read_only_float32_rows_are_read_in_place_with_the_same_numbers(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows viewed from the bytes of a log entry (read-only float32, as the worker reads a
    one-entry run): where the learner says it reads them in place, they take the kernel
    without a copy and give the numbers of a writable copy, bit for bit."""
    X, y, tasks = _batch(seed=2 + len(name))
    in_place = make(name, n_features=X.shape[1], n_tasks=5)
    copied = make(name, n_features=X.shape[1], n_tasks=5)
    if in_place.reads_readonly_rows:

        def general_path(*args: object) -> None:
            raise AssertionError("the rows took the general validation (a copy)")

        monkeypatch.setattr(in_place, "_score_and_learn_general", general_path)
    for part in np.array_split(np.arange(X.shape[0]), 3):
        rows = np.frombuffer(X[part].tobytes(), np.float32).reshape(len(part), X.shape[1])
        assert not rows.flags.writeable
        s_in_place = in_place.score_and_learn_many(rows, y[part], tasks[part])
        s_copied = copied.score_and_learn_many(X[part].copy(), y[part], tasks[part])
        assert np.array_equal(s_in_place, s_copied)
    wa, wb = in_place.task_weights(), copied.task_weights()
    assert wa is not None and wb is not None
    assert np.array_equal(wa, wb) and np.abs(wa).sum() > 0.0
    assert in_place.reads_readonly_rows == (not name.startswith("pa"))


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


@pytest.mark.parametrize("block", [1, 3, 17])
def test_small_blocks_equal_the_row_by_row_path(block: int) -> None:
    X, y, tasks = _batch(seed=block)
    X64 = X.astype(np.float64)
    blocks = make("cmtl", n_features=X.shape[1], n_tasks=5)
    rows = make("cmtl", n_features=X.shape[1], n_tasks=5)
    scores = np.concatenate(
        [
            blocks.score_and_learn_many(X64[a : a + block], y[a : a + block], tasks[a : a + block])
            for a in range(0, X.shape[0], block)
        ]
    )
    one = [rows.score_and_learn_one(x, v, t) for x, v, t in zip(X64, y.tolist(), tasks.tolist())]
    assert np.array_equal(scores, np.asarray(one))
    assert np.array_equal(blocks.task_weights(), rows.task_weights())
    assert blocks.n_mistakes_ == rows.n_mistakes_ > 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda X, y, t: y.__setitem__(1, 0.5), "-1 or \\+1"),
        (lambda X, y, t: t.__setitem__(2, 5), "unknown task"),
        (lambda X, y, t: t.__setitem__(0, -1), "unknown task"),
        (lambda X, y, t: X.__setitem__((2, 3), np.inf), "NaN or infinite"),
    ],
)
def test_a_small_block_with_bad_input_is_refused_and_changes_nothing(
    change: Callable[[np.ndarray, np.ndarray, np.ndarray], None], message: str
) -> None:
    X, y, tasks = _batch(seed=2)
    model = make("cmtl", n_features=X.shape[1], n_tasks=5)
    model.score_and_learn_many(X[:100].astype(np.float64), y[:100], tasks[:100])
    before, mistakes = model.task_weights(), model.n_mistakes_
    Xb, yb, tb = X[100:104].astype(np.float64), y[100:104].copy(), tasks[100:104].copy()
    change(Xb, yb, tb)
    with pytest.raises(ValueError, match=message):
        model.score_and_learn_many(Xb, yb, tb)
    assert np.array_equal(before, model.task_weights())
    assert model.n_mistakes_ == mistakes


@pytest.mark.parametrize("name", LINEAR)
def test_one_row_batches_take_the_event_lane_with_the_numbers_of_one_batch(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of one dense row (float64, float32, or read-only float32 as the worker reads
    it) runs the per-event lane, not the batch kernel, and gives the numbers of the whole
    stream as one batch, bit for bit."""
    X, y, tasks = _batch(seed=7 + len(name), n=300)
    X64 = X.astype(np.float64)
    lane = make(name, n_features=X.shape[1], n_tasks=5)
    whole = make(name, n_features=X.shape[1], n_tasks=5)

    def batch_path(*args: object) -> None:
        raise AssertionError("a batch of one row took the batch path")

    monkeypatch.setattr(lane, "_lean_batch", batch_path)
    forms = [
        lambda i: X64[i : i + 1],
        lambda i: X[i : i + 1].copy(),
        lambda i: np.frombuffer(X[i].tobytes(), np.float32).reshape(1, -1),
    ]
    scores = np.concatenate(
        [
            lane.score_and_learn_many(forms[i % 3](i), y[i : i + 1], tasks[i : i + 1])
            for i in range(X.shape[0])
        ]
    )
    assert np.array_equal(scores, whole.score_and_learn_many(X64, y, tasks))
    wa, wb = lane.task_weights(), whole.task_weights()
    assert wa is not None and wb is not None
    assert np.array_equal(wa, wb) and np.abs(wa).sum() > 0.0
    counter = "n_updates_" if name.startswith("pa") else "n_mistakes_"
    assert getattr(lane, counter) == getattr(whole, counter) > 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda X, y, t: y.__setitem__(0, 0.5), "-1 or \\+1"),
        (lambda X, y, t: y.__setitem__(0, np.nan), "-1 or \\+1"),
        (lambda X, y, t: t.__setitem__(0, 5), "unknown task"),
        (lambda X, y, t: t.__setitem__(0, -1), "unknown task"),
        (lambda X, y, t: X.__setitem__((0, 3), np.nan), "NaN or infinite"),
        (lambda X, y, t: X.__setitem__((0, 0), -np.inf), "NaN or infinite"),
    ],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_one_row_batch_with_bad_input_is_refused_and_changes_nothing(
    change: Callable[[np.ndarray, np.ndarray, np.ndarray], None], message: str, dtype: type
) -> None:
    X, y, tasks = _batch(seed=3)
    model = make("pa-individual", n_features=X.shape[1], n_tasks=5)
    model.score_and_learn_many(X[:100].astype(np.float64), y[:100], tasks[:100])
    before, updates = model.task_weights(), model.n_updates_
    Xb, yb, tb = X[100:101].astype(dtype), y[100:101].copy(), tasks[100:101].copy()
    change(Xb, yb, tb)
    with pytest.raises(ValueError, match=message):
        model.score_and_learn_many(Xb, yb, tb)
    assert np.array_equal(before, model.task_weights())
    assert model.n_updates_ == updates
