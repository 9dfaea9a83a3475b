"""Per-event cost of the xu2018 learners and of the rules over an adaptive base, against K and nnz(x).

The committee score needs all K margins ``<x, w_m>``: one ``(K x nnz)`` product,
so an event should cost O(K nnz(x)) (plus O(K) for tau), not O(K d). This prints
microseconds per event for sparse inputs in a wide space (d = 20000) at several
K and nnz, and for the dense 10-feature landmine shape, of two paths:

* a labelled round: ``decision_one``, ``query_one``, then ``learn_one`` whatever
  the answer (every event learned, the most expensive path, as a Python user's
  loop runs it);
* an unlabelled event as the service's worker applies it: one
  ``decide_and_query`` (score, query probability and answer).

Inputs are canonicalised once beforehand, as the evaluation harness and the
service do; the kernels are loaded before any timing
(:func:`learners.warm_kernels`); times are CPU time of this process.

Usage: ``python -m bench.perf.amlc_throughput [--events N] [--reps R]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

import learners

LEARNERS = (
    "amlc",
    "peer",
    "peer-share",
    "random-query",
    "independent",
    "amlc-adaptive",
    "peer-adaptive",
    "peer-share-adaptive",
)


def sparse_rows(n: int, d: int, nnz: int, rng: np.random.Generator) -> list[sp.csr_matrix]:
    """``n`` random CSR rows with ``nnz`` non-zeros each."""
    out = []
    for _ in range(n):
        idx = np.sort(rng.choice(d, size=nnz, replace=False))
        out.append(sp.csr_matrix((rng.normal(size=nnz), (np.zeros(nnz), idx)), shape=(1, d)))
    return out


def labelled_round(model: learners.Learner, x: learners.Vec, t: int, y: float) -> None:
    """decision_one, query_one, then learn_one whatever the answer."""
    model.decision_one(x, t)
    model.query_one(x, t)
    model.learn_one(x, y, t)


def unlabelled_event(model: learners.Learner, x: learners.Vec, t: int, y: float) -> None:
    """What the worker does with an event without a label."""
    model.decide_and_query(x, t, probability=True)


Path = Callable[[learners.Learner, learners.Vec, int, float], None]


def per_event_us(
    name: str, path: Path, rows: list, d: int, K: int, rng: np.random.Generator, reps: int
) -> float:
    """CPU microseconds per event of ``path`` over ``rows``, each time on a new model that
    has first learned a quarter of them (so that its weights and tau have moved); the
    least of ``reps`` repetitions (a shared host only ever adds time)."""
    tasks = rng.integers(K, size=len(rows)).tolist()
    labels = rng.choice([-1.0, 1.0], size=len(rows)).tolist()
    vecs = [learners.as_vector(x, d) for x in rows]
    best = float("inf")
    for _ in range(reps):
        model = learners.make(name, n_features=d, n_tasks=K, seed=0)
        for x, t, y in list(zip(vecs, tasks, labels, strict=True))[: len(rows) // 4]:
            model.learn_one(x, y, t)
        start = time.process_time()
        for x, t, y in zip(vecs, tasks, labels, strict=True):
            path(model, x, t, y)
        best = min(best, 1e6 * (time.process_time() - start) / len(rows))
    return best


def table(title: str, path: Path, n: int, rng: np.random.Generator, reps: int) -> None:
    """One table of ``path``: the sparse shapes, then the dense landmine shape."""
    d = 20_000
    print(f"{title}\nsparse x, d = {d}: microseconds per event")
    print(f"{'K':>5} {'nnz':>5} " + " ".join(f"{name:>19}" for name in LEARNERS))
    for K in (10, 100, 300):
        for nnz in (20, 200):
            rows = sparse_rows(n, d, nnz, rng)
            cells = [per_event_us(name, path, rows, d, K, rng, reps) for name in LEARNERS]
            print(f"{K:>5} {nnz:>5} " + " ".join(f"{c:19.1f}" for c in cells))
    print("dense x, d = 9 (landmine shape; bias appended by the learners)")
    print(f"{'K':>5} " + " ".join(f"{name:>19}" for name in LEARNERS))
    for K in (19, 100):
        rows = list(rng.normal(size=(4 * n, 9)))
        cells = [per_event_us(name, path, rows, 9, K, rng, reps) for name in LEARNERS]
        print(f"{K:>5} " + " ".join(f"{c:19.1f}" for c in cells))
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=400, help="sparse events per cell")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per cell (least kept)")
    args = parser.parse_args()
    learners.warm_kernels()
    rng = np.random.default_rng(0)
    for title, path in (
        ("Labelled rounds (decision_one + query_one + learn_one)", labelled_round),
        ("Unlabelled events (decide_and_query)", unlabelled_event),
    ):
        table(title, path, args.events, rng, args.reps)


if __name__ == "__main__":
    main()
