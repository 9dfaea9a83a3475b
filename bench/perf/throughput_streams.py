"""Synthetic related-task streams for the throughput benchmark.

Tasks drawn uniformly from K; true vectors
``w_k = w0 + 0.5 u_k`` with ``|w0| = 1`` and ``u_k ~ N(0, I/d)``; labels
``y = sign(w_k . x)`` with 5% flipped. Dense streams: ``x ~ N(0, I)`` scaled to
unit norm. Sparse stream: d = 100,000 with 80-120 distinct non-zeros per row,
Zipf-like feature ids (rank ``d u^3``, u uniform), positive tf-idf-like values, unit norm.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["BenchStream", "make_stream"]


@dataclass
class BenchStream:
    """One stream: ``X`` (dense array or CSR), labels ``y`` in {-1, +1}, ``task``."""

    label: str
    X: np.ndarray | sp.csr_matrix
    y: np.ndarray
    task: np.ndarray
    n_tasks: int

    @property
    def n(self) -> int:
        """Number of events."""
        return int(self.y.shape[0])

    @property
    def d(self) -> int:
        """Feature dimension."""
        return int(self.X.shape[1])


def _labels(scores: np.ndarray, rng: np.random.Generator, flip: float) -> np.ndarray:
    y = np.where(scores >= 0.0, 1.0, -1.0)
    flipped = rng.random(y.shape[0]) < flip
    y[flipped] = -y[flipped]
    return y


def _true_weights(K: int, d: int, rng: np.random.Generator) -> np.ndarray:
    w0 = rng.standard_normal(d)
    w0 /= np.linalg.norm(w0)
    return w0 + 0.5 * rng.standard_normal((K, d)) / np.sqrt(d)


def _skewed_distinct(rng: np.random.Generator, d: int, m: int) -> np.ndarray:
    """``m`` distinct ranks in ``[0, d)`` with a Zipf-like skew (rank ``d u^3``, u uniform)."""
    while True:
        draws = (d * rng.random(4 * m) ** 3).astype(np.int64)
        uniq, first = np.unique(draws, return_index=True)
        if uniq.shape[0] >= m:
            return draws[np.sort(first)[:m]]


def make_stream(
    K: int, d: int, n: int, *, sparse: bool = False, seed: int = 0, flip: float = 0.05
) -> BenchStream:
    """A stream of ``n`` events over ``K`` related tasks (see the module docstring)."""
    rng = np.random.default_rng(seed)
    W = _true_weights(K, d, rng)
    task = rng.integers(0, K, size=n)
    if not sparse:
        X = rng.standard_normal((n, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        y = _labels(np.einsum("ij,ij->i", X, W[task]), rng, flip)
        return BenchStream(f"K={K} d={d}", X, y, task, K)
    nnz = rng.integers(80, 121, size=n)
    indptr = np.concatenate([[0], np.cumsum(nnz)])
    perm = rng.permutation(d)  # skewed ranks -> scattered feature ids
    cols = np.empty(int(indptr[-1]), dtype=np.int64)
    for i in range(n):
        cols[indptr[i] : indptr[i + 1]] = perm[_skewed_distinct(rng, d, int(nnz[i]))]
    vals = rng.exponential(1.0, size=cols.shape[0]) + 0.1
    X = sp.csr_matrix((vals, cols, indptr), shape=(n, d))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    X.sort_indices()
    row = np.repeat(np.arange(n), np.diff(X.indptr))
    scores = np.bincount(row, weights=X.data * W[task[row], X.indices], minlength=n)
    y = _labels(scores, rng, flip)
    return BenchStream(f"sparse K={K}", X, y, task, K)
