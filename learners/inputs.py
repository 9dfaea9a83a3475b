"""Canonical feature vectors: one representation for dense, CSR and pair inputs.

Every learner receives its ``x`` through :func:`as_vector`, which turns a dense
1-D array, a ``1 x d`` scipy CSR row or an ``(indices, values)`` pair into a
:class:`Vec`. The canonical form is unique for a given mathematical vector:

* if every coordinate is non-zero the vector is *dense* (``idx is None`` and
  ``val`` holds all ``d`` values in order);
* otherwise it is *sparse*: ``idx`` holds the sorted, unique indices of the
  non-zero coordinates and ``val`` their values.

Because the three input forms map to the same :class:`Vec`, and every learner
computes with :class:`Vec` only, the three forms give bit-identical results.
Dense inputs cost O(d) to canonicalise (reading them is O(d) anyway); sparse
inputs cost O(nnz log nnz) and all learner arithmetic on them is O(nnz).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp

from learners.kernels import all_finite, copy_signs, nonzeros_if_finite
from learners.params import strict_int

FloatArray = np.ndarray
IntArray = np.ndarray

__all__ = ["Vec", "as_vector", "check_label", "check_task", "log_scaled_row", "numeric_array"]


class Vec:
    """A canonical feature vector (see the module docstring).

    Attributes
    ----------
    idx : ndarray of int64, shape (nnz,), or None
        Sorted unique indices of the non-zero coordinates; ``None`` when dense.
    val : ndarray of float64, shape (nnz,) or (d,)
        The values.
    dim : int
        The dimension ``d``.
    """

    __slots__ = ("dim", "idx", "val")

    def __init__(self, idx: IntArray | None, val: FloatArray, dim: int) -> None:
        self.idx = idx
        self.val = val
        self.dim = dim

    @property
    def nnz(self) -> int:
        """Number of stored values."""
        return int(self.val.shape[0])

    def dot(self, w: FloatArray) -> float:
        """Inner product with a length-``d`` vector ``w``."""
        if self.idx is None:
            return float(self.val @ w)
        return float(self.val @ w[self.idx])

    def dots(self, W: FloatArray) -> FloatArray:
        """Inner products with every row of ``W`` (shape ``(K, d)``) -> shape ``(K,)``."""
        if self.idx is None:
            return W @ self.val
        return W[:, self.idx] @ self.val

    def add_to(self, w: FloatArray, scale: float) -> None:
        """``w += scale * x`` in place (O(nnz))."""
        if self.idx is None:
            w += scale * self.val
        else:
            w[self.idx] += scale * self.val

    def add_outer(self, W: FloatArray, coef: FloatArray) -> None:
        """``W += outer(coef, x)`` in place for ``W`` of shape ``(K, d)`` (O(K nnz))."""
        if self.idx is None:
            W += np.outer(coef, self.val)
        else:
            W[:, self.idx] += np.outer(coef, self.val)

    def sqnorm(self) -> float:
        """Squared Euclidean norm."""
        return float(self.val @ self.val)

    def dense(self) -> FloatArray:
        """A fresh dense copy of length ``d``."""
        if self.idx is None:
            return self.val.copy()
        out = np.zeros(self.dim)
        out[self.idx] = self.val
        return out

    def scaled(self, factor: float) -> Vec:
        """A new vector ``factor * x`` with the same sparsity pattern."""
        return Vec(self.idx, self.val * factor, self.dim)

    def log_scaled(self) -> Vec:
        """A new vector of ``sign(x_j) log(1 + |x_j|)`` (the ``log_scale`` preprocessing,
        docs/algorithms.md Sec. 0): zeros stay zeros, so the sparsity pattern is kept."""
        return Vec(self.idx, _log_scale(self.val), self.dim)

    def unit_length(self) -> Vec:
        """This vector divided by its Euclidean norm (itself when the norm is 0): the
        ``l2_normalize`` preprocessing of a single row."""
        n2 = self.sqnorm()
        return self.scaled(1.0 / math.sqrt(n2)) if n2 > 0.0 else self

    def with_bias(self) -> Vec:
        """A new vector of dimension ``d + 1`` whose last coordinate is 1."""
        if self.idx is None:
            return Vec(None, _appended(self.val, 1.0), self.dim + 1)
        idx = _appended(self.idx, self.dim)
        val = _appended(self.val, 1.0)
        if idx.shape[0] == self.dim + 1:
            return Vec(None, val, self.dim + 1)
        return Vec(idx, val, self.dim + 1)


#: The element types of a dense 1-D row that :func:`as_vector` checks first, compared by
#: identity (numpy's native dtypes are single objects; ``dtype == np.float64`` takes
#: 0.14 us, as long as the rest of the test; a non-native byte order takes the general path).
_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)
#: The dtype kinds of numbers: booleans, signed and unsigned integers, floats. Strings,
#: complex numbers and objects (a Python int beyond int64) are refused, not converted.
_NUMERIC_KINDS = frozenset("biuf")


def numeric_array(values: Any, what: str) -> FloatArray:
    """``values`` as a float64 array; ``ValueError`` naming ``what`` when they are not
    numbers (:data:`_NUMERIC_KINDS`: a string is not parsed, a complex number not cut)."""
    if type(values) is np.ndarray and values.dtype == np.float64:
        return values  # the common case, without the conversions below
    try:
        arr = values if isinstance(values, np.ndarray) else np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged sequences, objects numpy cannot take
        raise ValueError(f"{what} must be numbers: {exc}") from None
    if arr.dtype.kind not in _NUMERIC_KINDS:
        raise ValueError(f"{what} must be numbers, got values of type {arr.dtype}")
    return arr.astype(np.float64, copy=False)


def _appended(a: np.ndarray, value: float) -> np.ndarray:
    """A new 1-D array: ``a``, then ``value`` (``np.append`` takes twice as long)."""
    out = np.empty(a.shape[0] + 1, dtype=a.dtype)
    out[:-1] = a
    out[-1] = value
    return out


def _log_scale(values: FloatArray) -> FloatArray:
    """``sign(v) log(1 + |v|)`` element-wise, in a new array (written in place after the
    first step: one array instead of three, 2.4 times faster on dense blocks). The sign
    comes back through the compiled :func:`~learners.kernels.copy_signs` for a
    contiguous float64 array (the same bits as ``np.copysign``, a third of the time of
    the whole scaling on a block of rows of 100 values)."""
    out = np.abs(values)
    np.log1p(out, out=out)
    if values.dtype == np.float64 and values.flags.c_contiguous:
        copy_signs(out.reshape(-1), values.reshape(-1))
    else:
        np.copysign(out, values, out=out)
    return out


def log_scaled_row(x: np.ndarray) -> FloatArray:
    """``sign(x_j) log(1 + |x_j|)`` of a 1-D float32 or float64 row, as a new C-contiguous
    float64 array: the values :meth:`Vec.log_scaled` gives the row's canonical vector
    (float32 values converted first, zeros kept)."""
    return _log_scale(x if x.dtype == np.float64 else x.astype(np.float64))


def _finish(idx: IntArray, val: FloatArray, dim: int) -> Vec:
    """Drop explicit zeros and choose the dense or sparse canonical form."""
    keep = val != 0.0
    if not keep.all():
        idx, val = idx[keep], val[keep]
    if idx.shape[0] == dim:
        return Vec(None, np.ascontiguousarray(val), dim)
    return Vec(idx, val, dim)


def _check_finite(val: FloatArray) -> None:
    # Large batches: a compiled single pass, because a multithreaded BLAS dot can be slow
    # on a busy machine. Small C-contiguous writable float64 vectors: the compiled count
    # of :func:`_from_dense` (one call; a sum of squares would also warn of an overflow
    # on large finite values). Other layouts: numpy's element test, which compiles nothing.
    flat = val.reshape(-1)
    if flat.shape[0] > 4096 and flat.flags.c_contiguous and flat.dtype == np.float64:
        finite = all_finite(flat)
    elif flat.dtype is _F64 and flat.flags.carray:
        finite = nonzeros_if_finite(flat) >= 0
    else:
        finite = bool(np.isfinite(val).all())
    if not finite:
        raise ValueError("x contains NaN or infinite values")


def _from_pair(indices: Any, values: Any, dim: int) -> Vec:
    idx = np.asarray(indices)
    val = numeric_array(values, "x values")
    if idx.ndim != 1 or val.ndim != 1 or idx.shape[0] != val.shape[0]:
        raise ValueError("x as (indices, values) needs two 1-D sequences of equal length")
    if idx.shape[0] and idx.dtype.kind not in "iuf":  # not booleans, strings or objects
        raise ValueError(f"x indices must be integers in [0, {dim}), got type {idx.dtype}")
    integral = np.issubdtype(idx.dtype, np.integer) or np.all(np.mod(idx, 1) == 0)
    if idx.shape[0] and not integral:
        raise ValueError("x indices must be integers")
    idx = idx.astype(np.int64, copy=False)
    _check_finite(val)
    if idx.shape[0] and (idx.min() < 0 or idx.max() >= dim):
        raise ValueError(f"x index out of range: indices must lie in [0, {dim})")
    if idx.shape[0] > 1 and not np.all(idx[1:] > idx[:-1]):
        order = np.argsort(idx, kind="stable")
        idx, val = idx[order], val[order]
        uniq, start = np.unique(idx, return_index=True)
        if uniq.shape[0] != idx.shape[0]:
            val = np.add.reduceat(val, start)
            idx = uniq
    return _finish(idx, val.copy(), dim)


def _from_csr_row(row: Any, dim: int) -> Vec:
    """A validated 1 x ``dim`` CSR row, read from its own arrays (no scipy conversion).

    A row in canonical format (sorted, unique indices) of float64 values needs only
    its two end indices checked, the finiteness test and a copy; any other row
    goes through the general ``(indices, values)`` path.
    """
    idx, val = row.indices, row.data
    if not (val.dtype == np.float64 and row.has_canonical_format):
        return _from_pair(idx, val, dim)
    n = idx.shape[0]
    if n and (idx[0] < 0 or idx[n - 1] >= dim):
        raise ValueError(f"x index out of range: indices must lie in [0, {dim})")
    _check_finite(val)
    idx, val = idx.astype(np.int64), val.copy()
    if not val.all():  # explicit zeros stored: drop them
        return _finish(idx, val, dim)
    return Vec(None, val, dim) if n == dim else Vec(idx, val, dim)


def as_vector(x: Any, dim: int) -> Vec:
    """Validate ``x`` and return its canonical :class:`Vec` of dimension ``dim``.

    Parameters
    ----------
    x : ndarray of shape (dim,), scipy sparse row of shape (1, dim), or (indices, values)
        The feature vector.
    dim : int
        The expected dimension.

    Raises
    ------
    ValueError
        On a wrong dimension, NaN or infinite values, out-of-range indices, or an
        unsupported type.
    """
    if type(x) is np.ndarray and x.ndim == 1:
        # the common cases first (float64, and the float32 rows of binary log entries),
        # without the conversions and type tests below
        dtype = x.dtype
        if dtype is _F64:
            return _from_dense(x, x, dim)
        if dtype is _F32:
            return _from_dense(x.astype(np.float64), x, dim)
    if isinstance(x, Vec):
        if x.dim != dim:
            raise ValueError(f"x has dimension {x.dim}, expected {dim}")
        return x
    if sp.issparse(x):
        if x.ndim != 2 or x.shape[0] != 1:
            raise ValueError(f"sparse x must be a single 1 x {dim} row, got shape {x.shape}")
        if x.shape[1] != dim:
            raise ValueError(f"x has dimension {x.shape[1]}, expected {dim}")
        return _from_csr_row(x if x.format == "csr" else x.tocsr(), dim)
    if isinstance(x, tuple) and len(x) == 2:
        return _from_pair(x[0], x[1], dim)
    if isinstance(x, dict) and set(x) == {"indices", "values"}:
        return _from_pair(x["indices"], x["values"], dim)
    arr = numeric_array(x, "x")
    if arr.ndim != 1:
        raise ValueError(f"dense x must be 1-D, got shape {arr.shape}")
    return _from_dense(arr, x, dim)


def _from_dense(arr: FloatArray, x: Any, dim: int) -> Vec:
    """The canonical vector of the 1-D float64 ``arr`` converted from the caller's ``x``
    (copied when it is ``x`` itself): checked for its dimension and finiteness, dense
    without zeros, else its non-zero entries."""
    if arr.shape[0] != dim:
        raise ValueError(f"x has dimension {arr.shape[0]}, expected {dim}")
    if arr.flags.carray:  # the type the compiled count is compiled for (no new specialisation)
        nonzero = nonzeros_if_finite(arr)
        if nonzero < 0:
            raise ValueError("x contains NaN or infinite values")
    else:
        _check_finite(arr)
        nonzero = np.count_nonzero(arr)
    if nonzero == dim:
        return Vec(None, arr.copy() if arr is x else arr, dim)
    idx = np.flatnonzero(arr)
    return Vec(idx, arr[idx], dim)


_INF = math.inf


def check_task(task: Any, n_tasks: int) -> int:
    """Return ``task`` as an int after checking it names one of ``n_tasks`` tasks."""
    if type(task) is int and 0 <= task < n_tasks:  # the common case, in 0.1 of the time
        return task
    t = strict_int(task, "task index", 0)
    if t >= n_tasks:
        raise ValueError(f"unknown task {t}: tasks are 0..{n_tasks - 1}")
    return t


def check_label(y: Any, kind: str) -> float:
    """Return ``y`` as a float after checking it suits the learner ``kind``.

    Classification labels must be -1 or +1; regression targets any finite real.
    """
    if type(y) is float:  # the common cases, in a fifth of the time
        if y == 1.0 or y == -1.0 or (kind != "classification" and -_INF < y < _INF):
            return y
    elif type(y) is int and (y == 1 or y == -1):
        return float(y)
    if isinstance(y, bool) or not isinstance(y, int | float | np.integer | np.floating):
        raise ValueError(f"label y must be a number, got {y!r}")
    try:
        v = float(y)
    except OverflowError:  # an int beyond float64's range
        raise ValueError(f"target y must be finite, got {y!r}") from None
    if kind == "classification":
        if v not in (-1.0, 1.0):
            raise ValueError(f"label y must be -1 or +1, got {y!r}")
    elif not np.isfinite(v):
        raise ValueError(f"target y must be finite, got {y!r}")
    return v


def canonical_row(row: FloatArray, dim: int) -> Vec:
    """Canonical :class:`Vec` of an already validated dense float64 row."""
    if row.all():
        return Vec(None, np.array(row), dim)
    idx = np.flatnonzero(row)
    return Vec(idx, row[idx], dim)


class Batch:
    """A validated batch of feature vectors: a dense 2-D array or a CSR matrix.

    Learners with a vectorised batch path read :attr:`dense` or :attr:`csr`;
    the others iterate :meth:`rows`, which yields exactly the :class:`Vec`
    objects that :func:`as_vector` would give row by row.
    """

    __slots__ = ("csr", "dense", "dim", "n")

    def __init__(self, dense: FloatArray | None, csr: sp.csr_matrix | None, dim: int) -> None:
        self.dense = dense
        self.csr = csr
        self.dim = dim
        self.n = int(dense.shape[0] if dense is not None else csr.shape[0])  # type: ignore[union-attr]

    @classmethod
    def from_input(cls, X: Any, dim: int, *, check_finite: bool = True) -> Batch:
        """Validate ``X`` (2-D array, sparse matrix, or a sequence of single vectors).

        ``check_finite=False`` skips the NaN/inf check of a 2-D array, for a caller
        that detects non-finite rows itself and undoes their effect.
        """
        if sp.issparse(X):
            if X.ndim != 2 or X.shape[1] != dim:
                raise ValueError(f"X must have {dim} columns, got shape {X.shape}")
            if X.dtype.kind not in _NUMERIC_KINDS:
                raise ValueError(f"X must hold numbers, got values of type {X.dtype}")
            csr = X if type(X) is sp.csr_matrix and X.dtype == np.float64 else None
            if csr is None or not (csr.has_canonical_format and csr.data.all()):
                # Canonicalise a copy: sorted unique indices, no explicit zeros.
                csr = sp.csr_matrix(X, dtype=np.float64, copy=True)
                csr.sum_duplicates()
                csr.eliminate_zeros()
                csr.sort_indices()
            _check_finite(csr.data)
            return cls(None, csr, dim)
        if isinstance(X, np.ndarray):
            if X.ndim != 2 or X.shape[1] != dim:
                raise ValueError(f"X must be 2-D with {dim} columns, got shape {X.shape}")
            arr = numeric_array(X, "X")
            if check_finite:
                _check_finite(arr)
            return cls(arr, None, dim)
        if not isinstance(X, Iterable):
            raise ValueError(
                "X must be a 2-D array, a sparse matrix or a sequence of vectors, "
                f"got {type(X).__name__}"
            )
        rows = [as_vector(r, dim) for r in X]
        return cls.from_vecs(rows, dim)

    @classmethod
    def from_vecs(cls, rows: list[Vec], dim: int) -> Batch:
        """Stack canonical vectors into a CSR batch."""
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        idx_parts, val_parts = [], []
        for i, v in enumerate(rows):
            idx = np.arange(dim) if v.idx is None else v.idx
            idx_parts.append(idx)
            val_parts.append(v.val)
            indptr[i + 1] = indptr[i] + idx.shape[0]
        indices = np.concatenate(idx_parts) if rows else np.zeros(0, dtype=np.int64)
        data = np.concatenate(val_parts) if rows else np.zeros(0)
        return cls(None, sp.csr_matrix((data, indices, indptr), shape=(len(rows), dim)), dim)

    def rows_between(self, start: int, stop: int) -> Batch:
        """Rows ``start`` to ``stop`` (excluded): a view of a dense batch; a CSR batch's
        rows built from slices of its own arrays (scipy's row slice checks every stored
        index of the part against a column range: 3.4 times the cost on 1,000 rows of 100
        non-zeros)."""
        if self.dense is not None:
            return Batch(self.dense[start:stop], None, self.dim)
        csr = self.csr
        assert csr is not None
        indptr = csr.indptr
        first, last = int(indptr[start]), int(indptr[stop])
        part = sp.csr_matrix(
            (csr.data[first:last], csr.indices[first:last], indptr[start : stop + 1] - first),
            shape=(stop - start, self.dim),
        )
        part.has_sorted_indices = csr.has_sorted_indices
        return Batch(None, part, self.dim)

    def log_scaled(self) -> Batch:
        """Every value ``x`` replaced by ``sign(x) log(1 + |x|)`` (see :meth:`Vec.log_scaled`)."""
        if self.dense is not None:
            return Batch(_log_scale(self.dense), None, self.dim)
        csr = self.csr
        assert csr is not None
        out = sp.csr_matrix((_log_scale(csr.data), csr.indices, csr.indptr), shape=csr.shape)
        out.has_sorted_indices = csr.has_sorted_indices
        return Batch(None, out, self.dim)

    def preprocessed(self, bias: bool, normalize: bool, log_scale: bool = False) -> Batch:
        """Apply the learner's ``log_scale``, ``append_bias`` and ``l2_normalize``
        preprocessing, in this order (docs/algorithms.md Sec. 0)."""
        if self.csr is not None and not self.csr.has_sorted_indices:
            # Kernels and rows() read a row's non-zeros in column order.
            return Batch(None, self.csr.sorted_indices(), self.dim).preprocessed(
                bias, normalize, log_scale
            )
        if log_scale:
            return self.log_scaled().preprocessed(bias, normalize)
        if not (bias or normalize):
            return self
        if self.dense is not None:
            X = self.dense
            if bias:
                X = np.hstack([X, np.ones((X.shape[0], 1))])
            if normalize:
                n2 = np.einsum("ij,ij->i", X, X)
                scale = np.where(n2 > 0.0, 1.0 / np.sqrt(np.where(n2 > 0.0, n2, 1.0)), 1.0)
                X = X * scale[:, None]
            return Batch(X, None, X.shape[1])
        csr = self.csr
        assert csr is not None
        if bias:
            csr = sp.csr_matrix(sp.hstack([csr, np.ones((csr.shape[0], 1))], format="csr"))
        if normalize:
            n2 = np.asarray(csr.multiply(csr).sum(axis=1)).ravel()
            scale = np.where(n2 > 0.0, 1.0 / np.sqrt(np.where(n2 > 0.0, n2, 1.0)), 1.0)
            csr = sp.csr_matrix(sp.diags(scale) @ csr)
        if not csr.has_sorted_indices:
            # Sparse products may leave rows unsorted; kernels and rows() read them in order.
            csr = csr.sorted_indices()
        return Batch(None, csr, csr.shape[1])

    def rows(self) -> list[Vec]:
        """The canonical vectors, row by row."""
        if self.dense is not None:
            return [canonical_row(r, self.dim) for r in self.dense]
        csr = self.csr
        assert csr is not None
        if not csr.has_sorted_indices:
            # A full row becomes a dense Vec: its values must be in column order.
            csr = csr.sorted_indices()
        out = []
        for i in range(self.n):
            s, e = csr.indptr[i], csr.indptr[i + 1]
            out.append(_finish(csr.indices[s:e].astype(np.int64), csr.data[s:e].copy(), self.dim))
        return out

    def to_dense(self) -> FloatArray:
        """The batch as a dense ``(n, dim)`` array."""
        if self.dense is not None:
            return self.dense
        assert self.csr is not None
        return np.asarray(self.csr.toarray())
