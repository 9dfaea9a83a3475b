"""Compiled weight pass of saha2011 Algorithm 1 (lines 4-13) for the OMTL learners.

One kernel call runs the sequential test-then-train pass over a batch, row by
row in stream order, for dense rows (:func:`weight_pass_dense`) or CSR rows
(:func:`weight_pass_csr`): the score ``<w_{i_t}, x>``, the round counter, on a
mistake the update ``w_j += y (A^{-1})_{j, i_t} x`` of every task (Eq. 3.3) and
the incremental Gram matrix ``G = W W^T`` and row sums of ``W``
(:func:`learners.omtl.updates.gram_after_rank_one`, algorithms.md Sec. 2.8).
Cost O(nnz) per row and O(K nnz + K^2) per mistake, whatever the mistake rate.

The ``K x K`` update of ``A`` (Eqs. 3.7-3.10, an eigendecomposition) stays in
numpy at its own cadence: a kernel stops right after the weight update of the
first mistake that must update A (round ``t >= EPOCH``) and returns the index of
the next row; the learner then applies the reference tail of that mistake (Gram
tracking and A update, in the order ``a_update_uses`` asks for) and calls the
kernel again from there.

Both kernels read and write the learner's arrays in place; ``counters`` holds
``[n_rounds, n_mistakes, stopped]`` and is updated in place too (``stopped``
is set to 1 when the kernel returned at a mistake that must update A).
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from learners.inputs import Batch, Vec, canonical_row

__all__ = ["KernelRows", "vec_dot", "warm", "weight_pass_csr", "weight_pass_dense"]


@njit(cache=True)
def _track_gram(
    G: np.ndarray, colsum: np.ndarray, u: np.ndarray, c: np.ndarray, xx: float, xsum: float
) -> None:
    """``G += c u^T + u c^T - ||x||^2 c c^T`` and ``colsum += c sum(x)`` (u = W' x after the step)."""
    K = c.shape[0]
    for a in range(K):
        for b in range(K):
            G[a, b] = G[a, b] + c[a] * u[b] + c[b] * u[a] - xx * (c[a] * c[b])
        colsum[a] = colsum[a] + c[a] * xsum


@njit(cache=True)
def weight_pass_dense(
    X: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    begin: int,
    W: np.ndarray,
    Ainv: np.ndarray,
    G: np.ndarray,
    colsum: np.ndarray,
    counters: np.ndarray,
    round_step: int,
    a_from: int,
    scores: np.ndarray,
) -> int:
    """Rows ``begin..`` of a dense batch; returns the next row (``n`` when done).

    Stops after the weight update of a mistake made at round ``>= a_from``
    (its Gram tracking and the A update are left to the caller).
    """
    n, d = X.shape
    K = W.shape[0]
    c = np.empty(K)
    u = np.empty(K)
    for i in range(begin, n):
        t = tasks[i]
        label = y[i]
        s = 0.0
        for f in range(d):
            s += X[i, f] * W[t, f]
        scores[i] = s
        counters[0] += round_step
        if (s >= 0.0) == (label > 0.0):
            continue
        for k in range(K):
            c[k] = label * Ainv[k, t]
            if c[k] != 0.0:
                for f in range(d):
                    W[k, f] += c[k] * X[i, f]
        counters[1] += 1
        if counters[0] >= a_from:
            counters[2] = 1
            return i + 1
        xx = 0.0
        xsum = 0.0
        for f in range(d):
            xx += X[i, f] * X[i, f]
            xsum += X[i, f]
        for k in range(K):
            acc = 0.0
            for f in range(d):
                acc += W[k, f] * X[i, f]
            u[k] = acc
        _track_gram(G, colsum, u, c, xx, xsum)
    return n


@njit(cache=True)
def weight_pass_csr(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    begin: int,
    W: np.ndarray,
    Ainv: np.ndarray,
    G: np.ndarray,
    colsum: np.ndarray,
    counters: np.ndarray,
    round_step: int,
    a_from: int,
    scores: np.ndarray,
) -> int:
    """:func:`weight_pass_dense` for CSR rows (O(nnz) per row, O(K nnz) per mistake)."""
    n = y.shape[0]
    K = W.shape[0]
    c = np.empty(K)
    u = np.empty(K)
    for i in range(begin, n):
        lo, hi = indptr[i], indptr[i + 1]
        t = tasks[i]
        label = y[i]
        s = 0.0
        for p in range(lo, hi):
            s += data[p] * W[t, indices[p]]
        scores[i] = s
        counters[0] += round_step
        if (s >= 0.0) == (label > 0.0):
            continue
        for k in range(K):
            c[k] = label * Ainv[k, t]
            if c[k] != 0.0:
                for p in range(lo, hi):
                    W[k, indices[p]] += c[k] * data[p]
        counters[1] += 1
        if counters[0] >= a_from:
            counters[2] = 1
            return i + 1
        xx = 0.0
        xsum = 0.0
        for p in range(lo, hi):
            xx += data[p] * data[p]
            xsum += data[p]
        for k in range(K):
            acc = 0.0
            for p in range(lo, hi):
                acc += W[k, indices[p]] * data[p]
            u[k] = acc
        _track_gram(G, colsum, u, c, xx, xsum)
    return n


@njit(cache=True)
def _dot_dense(val: np.ndarray, w: np.ndarray) -> float:
    s = 0.0
    for f in range(val.shape[0]):
        s += val[f] * w[f]
    return s


@njit(cache=True)
def _dot_sparse(idx: np.ndarray, val: np.ndarray, w: np.ndarray) -> float:
    s = 0.0
    for p in range(val.shape[0]):
        s += val[p] * w[idx[p]]
    return s


def vec_dot(x: Vec, w: np.ndarray) -> float:
    """``<x, w>`` summed in the kernels' order, so a decision equals the kernel's score bit for bit."""
    if x.idx is None:
        return float(_dot_dense(x.val, w))
    return float(_dot_sparse(x.idx, x.val, w))


def warm() -> float:
    """Compile (or load from the cache) both kernels on tiny inputs; returns the seconds taken."""
    start = time.perf_counter()
    K, d = 2, 3
    X = np.ones((2, d))
    y = np.array([1.0, -1.0])
    tasks = np.array([0, 1], dtype=np.int64)
    indptr = np.array([0, 2, 3], dtype=np.int64)
    indices = np.array([0, 2, 1], dtype=np.int64)
    data = np.ones(3)
    for sparse in (False, True):
        W, Ainv, G, colsum = np.zeros((K, d)), np.eye(K), np.zeros((K, K)), np.zeros(K)
        counters = np.zeros(3, dtype=np.int64)
        scores = np.empty(2)
        if sparse:
            weight_pass_csr(
                indptr, indices, data, y, tasks, 0, W, Ainv, G, colsum, counters, 1, 1 << 62, scores
            )
        else:
            weight_pass_dense(X, y, tasks, 0, W, Ainv, G, colsum, counters, 1, 1 << 62, scores)
    vec_dot(Vec(None, data, 3), data)
    vec_dot(Vec(indices[:2], data[:2], 3), data)
    return time.perf_counter() - start


class KernelRows:
    """A batch in the form the kernels take: a dense C-ordered array or CSR arrays (int64)."""

    __slots__ = ("data", "dense", "dim", "indices", "indptr")

    def __init__(
        self,
        dense: np.ndarray | None,
        csr: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
        dim: int,
    ) -> None:
        self.dense = dense
        self.indptr, self.indices, self.data = csr if csr is not None else (None, None, None)
        self.dim = dim

    @classmethod
    def of_batch(cls, batch: Batch) -> KernelRows:
        """The rows of a validated, preprocessed :class:`~learners.inputs.Batch`."""
        if batch.dense is not None:
            return cls(np.ascontiguousarray(batch.dense, dtype=np.float64), None, batch.dim)
        csr = batch.csr
        assert csr is not None
        arrays = (
            np.asarray(csr.indptr, dtype=np.int64),
            np.asarray(csr.indices, dtype=np.int64),
            np.ascontiguousarray(csr.data, dtype=np.float64),
        )
        return cls(None, arrays, batch.dim)

    @classmethod
    def of_vec(cls, x: Vec) -> KernelRows:
        """One canonical vector as a one-row batch (no copy of its values)."""
        if x.idx is None:
            return cls(x.val.reshape(1, -1), None, x.dim)
        indptr = np.array([0, x.idx.shape[0]], dtype=np.int64)
        return cls(None, (indptr, np.asarray(x.idx, dtype=np.int64), x.val), x.dim)

    def vec(self, i: int) -> Vec:
        """Row ``i`` as the canonical :class:`~learners.inputs.Vec` the reference path sees."""
        if self.dense is not None:
            return canonical_row(self.dense[i], self.dim)
        assert self.indptr is not None and self.indices is not None and self.data is not None
        lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
        idx, val = self.indices[lo:hi], self.data[lo:hi].copy()
        if hi - lo == self.dim:
            return Vec(None, val, self.dim)
        return Vec(idx.copy(), val, self.dim)

    def run(
        self,
        begin: int,
        y: np.ndarray,
        tasks: np.ndarray,
        W: np.ndarray,
        Ainv: np.ndarray,
        G: np.ndarray,
        colsum: np.ndarray,
        counters: np.ndarray,
        round_step: int,
        a_from: int,
        scores: np.ndarray,
    ) -> int:
        """The weight pass over rows ``begin..`` (see :func:`weight_pass_dense`)."""
        if self.dense is not None:
            return int(
                weight_pass_dense(
                    self.dense,
                    y,
                    tasks,
                    begin,
                    W,
                    Ainv,
                    G,
                    colsum,
                    counters,
                    round_step,
                    a_from,
                    scores,
                )
            )
        return int(
            weight_pass_csr(
                self.indptr,
                self.indices,
                self.data,
                y,
                tasks,
                begin,
                W,
                Ainv,
                G,
                colsum,
                counters,
                round_step,
                a_from,
                scores,
            )
        )
