"""Per-event cost of the xu2018 learners: decision + query + learn, against K and nnz(x).

The committee score needs all K margins ``<x, w_m>``: one ``(K x nnz)`` product,
so an event should cost O(K nnz(x)) (plus O(K) for tau), not O(K d). This prints
microseconds per event for sparse inputs in a wide space (d = 20000) at several
K and nnz, and for the dense 10-feature landmine shape. Every event is learned
(the label is given whatever ``query_one`` answered), the most expensive path.
Inputs are canonicalised once beforehand, as the evaluation harness and the
service do; times are CPU time of this process.

Usage: ``python -m bench.perf.amlc_throughput``
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

import learners

LEARNERS = ("amlc", "peer", "peer-share", "random-query", "independent")


def sparse_rows(n: int, d: int, nnz: int, rng: np.random.Generator) -> list[sp.csr_matrix]:
    """``n`` random CSR rows with ``nnz`` non-zeros each."""
    out = []
    for _ in range(n):
        idx = np.sort(rng.choice(d, size=nnz, replace=False))
        out.append(sp.csr_matrix((rng.normal(size=nnz), (np.zeros(nnz), idx)), shape=(1, d)))
    return out


def per_event_us(name: str, rows: list, d: int, K: int, rng: np.random.Generator) -> float:
    """Mean microseconds of decision_one + query_one + learn_one over ``rows``."""
    model = learners.make(name, n_features=d, n_tasks=K, seed=0)
    tasks = rng.integers(K, size=len(rows)).tolist()
    labels = rng.choice([-1.0, 1.0], size=len(rows)).tolist()
    vecs = [learners.as_vector(x, d) for x in rows]
    start = time.process_time()
    for x, t, y in zip(vecs, tasks, labels, strict=True):
        model.decision_one(x, t)
        model.query_one(x, t)
        model.learn_one(x, y, t)
    return 1e6 * (time.process_time() - start) / len(rows)


def main() -> None:
    rng = np.random.default_rng(0)
    d, n = 20_000, 400
    print(f"sparse x, d = {d}: microseconds per event (decision + query + learn)")
    print(f"{'K':>5} {'nnz':>5} " + " ".join(f"{name:>13}" for name in LEARNERS))
    for K in (10, 100, 300):
        for nnz in (20, 200):
            rows = sparse_rows(n, d, nnz, rng)
            cells = [per_event_us(name, rows, d, K, rng) for name in LEARNERS]
            print(f"{K:>5} {nnz:>5} " + " ".join(f"{c:13.1f}" for c in cells))
    print("\ndense x, d = 9 (landmine shape; bias appended by the learners)")
    print(f"{'K':>5} " + " ".join(f"{name:>13}" for name in LEARNERS))
    for K in (19, 100):
        rows = list(rng.normal(size=(2000, 9)))
        cells = [per_event_us(name, rows, 9, K, rng) for name in LEARNERS]
        print(f"{K:>5} " + " ".join(f"{c:13.1f}" for c in cells))


if __name__ == "__main__":
    main()
