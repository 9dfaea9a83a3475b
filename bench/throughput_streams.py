"""Synthetic related-task streams for the throughput benchmark.

Following guides/perf-anchors.md: tasks drawn uniformly from K; true vectors
``w_k = w0 + 0.5 u_k`` with ``|w0| = 1`` and ``u_k ~ N(0, I/d)``; labels
``y = sign(w_k . x)`` with 5% flipped. Dense streams: ``x ~ N(0, I)`` scaled to
unit norm. Sparse stream: d = 100,000 with 80-120 non-zeros per row, Zipf-like
feature ids, positive tf-idf-like values, unit norm.
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
    ranks = rng.zipf(1.3, size=int(indptr[-1])) % d
    perm = rng.permutation(d)  # Zipf ranks -> scattered feature ids
    cols = perm[ranks]
    vals = rng.exponential(1.0, size=cols.shape[0]) + 0.1
    X = sp.csr_matrix((vals, cols, indptr), shape=(n, d))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    X.sort_indices()
    y = _labels(np.asarray((X.multiply(W[task])).sum(axis=1)).ravel(), rng, flip)
    return BenchStream(f"sparse K={K}", X, y, task, K)
