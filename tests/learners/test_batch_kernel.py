"""The batch kernel's fixed-point iteration against the plain one-mistake-at-a-time loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learners.perceptron import batch
from learners.perceptron.batch import sequential_mistakes

NEG_TINY = float(np.nextafter(0.0, -1.0))


def reference(z: np.ndarray, y: np.ndarray, Hy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row by row: row k is a mistake when its current signed margin says so."""
    z = z.copy()
    found = []
    for k in range(z.shape[0]):
        if z[k] < 0.0 or (z[k] == 0.0 and y[k] < 0.0):
            found.append(k)
            z[k + 1 :] += Hy[k, k + 1 :]
    return np.asarray(found, dtype=np.int64), z


class CountingRows:
    """``rows(idx)`` over a full matrix, remembering which rows were asked for."""

    def __init__(self, Hy: np.ndarray) -> None:
        self.Hy = Hy
        self.asked: list[int] = []

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        self.asked.extend(idx.tolist())
        return self.Hy[idx]


def problem(n: int, coupling: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integer margins and interactions (exact sums), random labels."""
    rng = np.random.default_rng(seed)
    z = rng.integers(-3, 6, size=n).astype(float)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    Hy = np.round(coupling * rng.standard_normal((n, n)))
    return z, y, Hy


@pytest.mark.parametrize("coupling", [0.0, 0.5, 2.0, 20.0])
@pytest.mark.parametrize("seed", range(5))
def test_same_mistakes_and_margins_as_the_row_loop(coupling, seed):
    z, y, Hy = problem(150, coupling, seed)
    want, want_z = reference(z, y, Hy)
    got_z = z.copy()
    got = sequential_mistakes(got_z, y, CountingRows(Hy))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_z, want_z)


def test_strong_coupling_takes_the_one_by_one_finish(monkeypatch):
    """A mistake puts its next row right, so the mistakes are the even rows; each guess
    is wrong about the rest of the batch and the fixed point settles two rows per two rounds."""
    n = 40
    z = np.full(n, -1.0)  # all wrong at the batch start, all labels +1
    y = np.ones(n)
    Hy = np.zeros((n, n))
    Hy[np.arange(n - 1), np.arange(1, n)] = 3.0
    want, want_z = reference(z, y, Hy)
    finished = []
    original = batch._finish_one_by_one
    monkeypatch.setattr(batch, "_finish_one_by_one", lambda *a: finished.append(1) or original(*a))
    got_z = z.copy()
    got = sequential_mistakes(got_z, y, CountingRows(Hy))
    assert finished == [1]
    assert want.tolist() == list(range(0, n, 2))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_z, want_z)


def test_only_rows_of_guessed_mistakes_are_computed():
    z, y, Hy = problem(200, 0.0, 3)  # no interaction: the first guess is the answer
    rows = CountingRows(Hy)
    got = sequential_mistakes(z.copy(), y, rows)
    assert sorted(rows.asked) == got.tolist()
    assert 0 < len(rows.asked) < 200


def test_no_mistakes_asks_for_no_rows():
    z = np.array([1.0, 2.0, 0.0])
    y = np.array([1.0, 1.0, 1.0])  # a score of 0 predicts +1: right
    rows = CountingRows(np.ones((3, 3)))
    assert sequential_mistakes(z, y, rows).size == 0
    assert rows.asked == []


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 60),
    coupling=st.sampled_from([0.0, 0.3, 1.0, 4.0, 50.0]),
    seed=st.integers(0, 2**31 - 1),
)
def test_property_equals_the_row_loop(n, coupling, seed):
    z, y, Hy = problem(n, coupling, seed)
    want, want_z = reference(z, y, Hy)
    got_z = z.copy()
    np.testing.assert_array_equal(sequential_mistakes(got_z, y, CountingRows(Hy)), want)
    np.testing.assert_array_equal(got_z, want_z)
