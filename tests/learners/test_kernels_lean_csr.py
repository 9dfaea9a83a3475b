"""The lean CSR path of the linear kernels: a csr_matrix straight to one checked kernel call.

``CompiledLinear.score_and_learn_many`` hands a ``csr_matrix`` of float64 values
with int32 or int64 indices to ``learn_csr_checked`` (learners/perceptron/kernels.py),
which checks in one pass that it is canonical (sorted unique in-range columns, no
stored zeros), finite, with labels -1/+1 and known tasks. A canonical batch must
give the numbers of the general path bit for bit; a non-canonical one is refused by
the check and canonicalised by the general path (the same numbers as its canonical
form); bad input gives the general validation's error and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import scipy.sparse as sp

from learners.perceptron.compiled import CompiledLinear
from learners.perceptron.kernels import BAD_INPUT, INDEPENDENT, learn_csr_checked
from learners.registry import make

LINEAR = ["cmtl", "ipl", "pt-global", "pa-global", "pa-individual"]


def _batch(seed: int, n: int = 300, d: int = 40, k: int = 4) -> tuple[sp.csr_matrix, ...]:
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.15, random_state=seed, format="csr")
    X.data = rng.normal(size=X.data.shape[0])
    tasks = rng.integers(k, size=n).astype(np.int64)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return X, y, tasks


def _state(model: CompiledLinear) -> np.ndarray:
    return model._S.copy()


@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("name", LINEAR)
def test_a_csr_batch_gives_the_numbers_of_the_general_path(name: str, index: type) -> None:
    X, y, tasks = _batch(seed=len(name))
    X.indices, X.indptr = X.indices.astype(index), X.indptr.astype(index)
    lean = make(name, n_features=40, n_tasks=4)
    general = make(name, n_features=40, n_tasks=4)
    assert isinstance(lean, CompiledLinear) and isinstance(general, CompiledLinear)
    assert lean._lean_csr(X, y, tasks)
    for a in range(0, 300, 100):
        rows = slice(a, a + 100)
        s1 = lean.score_and_learn_many(X[rows], y[rows], tasks[rows])
        s2 = general._score_and_learn_general(X[rows], y[rows], tasks[rows])
        assert np.array_equal(s1, s2)
    assert np.array_equal(_state(lean), _state(general))
    assert np.abs(_state(lean)).sum() > 0.0
    counter = "n_updates_" if name.startswith("pa") else "n_mistakes_"
    assert getattr(lean, counter) == getattr(general, counter) > 0


def _unsorted(X: sp.csr_matrix) -> sp.csr_matrix:
    out = X.copy()
    a, b = out.indptr[0], out.indptr[1]
    out.indices[a:b] = out.indices[a:b][::-1].copy()
    out.data[a:b] = out.data[a:b][::-1].copy()
    out.has_sorted_indices = False
    return out


def _explicit_zero(X: sp.csr_matrix) -> sp.csr_matrix:
    out = X.copy()
    out.data[3] = 0.0
    return out


def _duplicate(X: sp.csr_matrix) -> sp.csr_matrix:
    out = X.copy()
    a = out.indptr[0]
    out.indices[a + 1] = out.indices[a]  # the row's first column twice
    out.has_canonical_format = False
    return out


@pytest.mark.parametrize("spoil", [_unsorted, _explicit_zero, _duplicate])
def test_a_non_canonical_batch_is_refused_by_the_check_and_canonicalised(
    spoil: Callable[[sp.csr_matrix], sp.csr_matrix],
) -> None:
    X, y, tasks = _batch(seed=3)
    bad = spoil(X)
    S = np.zeros((4, 40))
    scores = np.empty(300)
    args = (bad.indptr, bad.indices, bad.data, y, tasks, 4, 0.0, 0.0, scores)
    assert learn_csr_checked(INDEPENDENT, S, np.zeros((1, 1)), *args) == BAD_INPUT
    assert not S.any()
    fixed = sp.csr_matrix(bad, copy=True)
    fixed.sum_duplicates()
    fixed.eliminate_zeros()
    fixed.sort_indices()
    a, b = make("ipl", n_features=40, n_tasks=4), make("ipl", n_features=40, n_tasks=4)
    assert np.array_equal(
        a.score_and_learn_many(bad, y, tasks), b.score_and_learn_many(fixed, y, tasks)
    )
    assert np.array_equal(a.task_weights(), b.task_weights())


def _set_data(i: int, v: float) -> Callable[[sp.csr_matrix, np.ndarray, np.ndarray], None]:
    return lambda X, y, t: X.data.__setitem__(i, v)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda X, y, t: y.__setitem__(150, 0.5), "-1 or \\+1"),
        (lambda X, y, t: t.__setitem__(120, 4), "unknown task"),
        (lambda X, y, t: t.__setitem__(0, -1), "unknown task"),
        (_set_data(-1, np.inf), "NaN or infinite"),
        (_set_data(7, np.nan), "NaN or infinite"),
    ],
)
def test_a_csr_batch_with_bad_input_is_refused_and_changes_nothing(
    change: Callable[[sp.csr_matrix, np.ndarray, np.ndarray], None], message: str
) -> None:
    X, y, tasks = _batch(seed=5)
    model = make("cmtl", n_features=40, n_tasks=4)
    model.score_and_learn_many(X[:100], y[:100], tasks[:100])
    before, mistakes = model.task_weights(), model.n_mistakes_
    Xb, yb, tb = X[100:], y[100:].copy(), tasks[100:].copy()
    change(Xb, yb, tb)
    with pytest.raises(ValueError, match=message):
        model.score_and_learn_many(Xb, yb, tb)
    assert np.array_equal(before, model.task_weights())
    assert model.n_mistakes_ == mistakes
