"""Batch rows of CSR input in column order, and the lean 1 x d CSR row of as_vector."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.inputs import Batch, as_vector


def _unsorted_csr() -> sp.csr_matrix:
    """Row 0 is full (3 of 3 columns) with its indices out of order; row 1 is sparse."""
    data = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    indices = np.array([2, 0, 1, 2, 0])
    return sp.csr_matrix((data, indices, np.array([0, 3, 5])), shape=(2, 3))


def _dense_rows(batch: Batch) -> np.ndarray:
    return np.vstack([v.dense() for v in batch.rows()])


@pytest.mark.parametrize(("bias", "normalize"), [(False, False), (True, True), (True, False)])
def test_rows_of_an_unsorted_csr_batch_are_in_column_order(bias, normalize):
    dense = np.array([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    expected = Batch(dense, None, 3).preprocessed(bias, normalize).dense
    batch = Batch(None, _unsorted_csr(), 3).preprocessed(bias, normalize)
    np.testing.assert_allclose(_dense_rows(batch), expected, rtol=1e-15)
    csr = batch.csr
    assert csr is not None
    for i in range(batch.n):
        assert np.all(np.diff(csr.indices[csr.indptr[i] : csr.indptr[i + 1]]) > 0)


def test_the_row_by_row_path_of_unsorted_csr_equals_the_dense_batch():
    X = np.array([[1.0, 2.0, 3.0], [4.0, 0.0, 5.0]])
    y = np.array([1.0, -1.0])
    tasks = np.array([0, 1])
    params = {"append_bias": True, "l2_normalize": True}
    by_rows = learners.make("amlc", n_features=3, n_tasks=2, **params)
    dense = learners.make("amlc", n_features=3, n_tasks=2, **params)
    for v, label, t in zip(Batch(None, _unsorted_csr(), 3).rows(), y, tasks, strict=True):
        by_rows.score_and_learn_one(v, label, int(t))
    dense.score_and_learn_many(X, y, tasks)
    for key, value in dense.state_dict().items():
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(by_rows.state_dict()[key], value, rtol=1e-12)


@pytest.mark.parametrize("density", [1.0, 0.3])
def test_as_vector_of_a_csr_row_equals_the_dense_row(density):
    rng = np.random.default_rng(1)
    x = rng.normal(size=20) * (rng.random(20) < density)
    for form in (sp.csr_matrix(x), sp.csr_array(x.reshape(1, -1)), sp.coo_matrix(x)):
        v = as_vector(form, 20)
        np.testing.assert_array_equal(v.dense(), x)
        assert (v.idx is None) == (density == 1.0)
        v.val[:] = 0.0  # a copy: the caller's row is untouched
        np.testing.assert_array_equal(sp.csr_matrix(form).toarray().ravel(), x)


def test_as_vector_of_a_csr_row_checks_values_indices_and_duplicates():
    with pytest.raises(ValueError, match="NaN or infinite"):
        as_vector(sp.csr_matrix(np.array([[1.0, np.nan, 0.0]])), 3)
    with pytest.raises(ValueError, match="dimension"):
        as_vector(sp.csr_matrix(np.ones((1, 4))), 3)
    dup = sp.csr_matrix((np.array([1.0, 2.0]), np.array([1, 1]), np.array([0, 2])), shape=(1, 3))
    np.testing.assert_array_equal(as_vector(dup, 3).dense(), [0.0, 3.0, 0.0])
    zero = sp.csr_matrix((np.array([0.0, 2.0]), np.array([0, 2]), np.array([0, 2])), shape=(1, 3))
    v = as_vector(zero, 3)
    np.testing.assert_array_equal(v.idx, [2])
    np.testing.assert_array_equal(v.val, [2.0])


def test_log_scaled_rows_are_the_same_in_every_form_and_come_before_the_bias() -> None:
    """``sign(x) log(1 + |x|)`` of a dense batch, its CSR form and each row's Vec agree; the
    bias appended after it is 1 and the unit length is taken last (docs/algorithms.md Sec. 0)."""
    X = np.array([[3.0, 0.0, -1.0], [0.0, 0.0, 0.0], [0.5, 7.0, 0.0]])
    want = np.copysign(np.log1p(np.abs(X)), X)
    dense = Batch.from_input(X, 3).preprocessed(True, False, True)
    csr = Batch.from_input(sp.csr_matrix(X), 3).preprocessed(True, False, True)
    np.testing.assert_array_equal(dense.dense, np.hstack([want, np.ones((3, 1))]))
    np.testing.assert_array_equal(csr.csr.toarray(), dense.dense)
    for row, x, v in zip(want, X, Batch.from_input(X, 3).log_scaled().rows(), strict=True):
        for got in (v, as_vector(x, 3).log_scaled()):
            expect = as_vector(row, 3)
            assert (got.idx is None) == (expect.idx is None)
            if expect.idx is not None:
                np.testing.assert_array_equal(got.idx, expect.idx)
            np.testing.assert_array_equal(got.val, expect.val)
    unit = Batch.from_input(X, 3).preprocessed(True, True, True).dense
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, rtol=1e-15)


def test_a_full_csr_row_with_stored_zeros_is_canonical():
    """A 1 x d CSR row that stores all d entries, some of them 0, is sparse in its
    canonical form: a dense Vec has no zero entry (the kernels and the references
    rely on it)."""
    row = sp.csr_matrix(
        (np.array([1.0, 0.0, 2.0]), np.array([0, 1, 2]), np.array([0, 3])), shape=(1, 3)
    )
    assert row.has_canonical_format and row.nnz == 3
    v = as_vector(row, 3)
    np.testing.assert_array_equal(v.idx, [0, 2])
    np.testing.assert_array_equal(v.val, [1.0, 2.0])
    full = as_vector(sp.csr_matrix(np.array([[1.0, 3.0, 2.0]])), 3)
    assert full.idx is None
    np.testing.assert_array_equal(full.val, [1.0, 3.0, 2.0])


@pytest.mark.parametrize(("start", "stop"), [(0, 9), (0, 4), (3, 7), (5, 5), (8, 9), (2, 3)])
def test_rows_between_of_a_csr_batch_are_scipys_row_slice(start: int, stop: int) -> None:
    """The rows cut from the CSR arrays equal scipy's row slice (empty rows and an empty
    cut included), keep the sorted-indices flag, and leave the batch's arrays as they were."""
    X = sp.random(9, 50, density=0.2, format="csr", random_state=4)
    X = sp.csr_matrix(X.multiply(np.arange(9)[:, None] % 3 != 1))  # rows 1, 4, 7 empty
    X.eliminate_zeros()
    batch = Batch.from_input(X, 50)
    data, indptr = batch.csr.data.copy(), batch.csr.indptr.copy()
    part = batch.rows_between(start, stop)
    want = X[start:stop]
    assert part.n == stop - start and part.dim == 50
    assert part.csr.shape == want.shape and part.csr.has_sorted_indices
    assert np.array_equal(part.csr.indptr, want.indptr)
    assert np.array_equal(part.csr.indices, want.indices)
    assert np.array_equal(part.csr.data, want.data)
    assert [v.dense().tolist() for v in part.rows()] == X[start:stop].toarray().tolist()
    assert np.array_equal(batch.csr.data, data) and np.array_equal(batch.csr.indptr, indptr)
