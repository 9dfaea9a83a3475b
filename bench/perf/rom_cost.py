"""Per-event cost of the ROM learners: O(nnz(x)), independent of the dimension d.

Feeds the same sparse stream (100 non-zeros per row, K = 10 tasks) at
d = 1,000, 10,000 and 100,000 through ``learn_one`` and prints microseconds per
event (best of 3 passes). With O(nnz) updates the figure stays flat as d grows 100-fold; a learner
doing O(d) work per event would slow down about 100 times.

Usage: ``python -m bench.perf.rom_cost [--events 5000]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import learners

LEARNERS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("rom-pgd", {"alpha": 1.0, "gamma": 0.5}),
    ("rom-rda", {}),
    ("coml", {}),
)
DIMS = (1_000, 10_000, 100_000)


def stream(
    d: int, n: int, nnz: int, K: int, seed: int = 0
) -> list[tuple[tuple[np.ndarray, np.ndarray], float, int]]:
    """``n`` sparse rows as (indices, values) pairs with labels from a hidden sparse model."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    rows = []
    for _ in range(n):
        idx = np.sort(rng.choice(d, size=nnz, replace=False))
        val = rng.normal(size=nnz) / np.sqrt(nnz)
        y = 1.0 if val @ w[idx] >= 0 else -1.0
        rows.append(((idx, val), y, int(rng.integers(K))))
    return rows


def micros_per_event(name: str, params: dict[str, Any], d: int, n: int, repeats: int = 3) -> float:
    """Wall time of predict + learn per event in microseconds: the best of ``repeats`` passes
    (each with a fresh learner), so that load from other processes inflates it less."""
    K = 10
    rows = stream(d, n, 100, K)
    best = float("inf")
    for _ in range(repeats):
        model = learners.make(name, n_features=d, n_tasks=K, **params)
        start = time.perf_counter()
        for x, y, t in rows:
            model.decision_one(x, t)
            model.learn_one(x, y, t)
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    args = parser.parse_args()
    print("| learner | " + " | ".join(f"d = {d:,}" for d in DIMS) + " |")
    print("|---|" + "---|" * len(DIMS))
    for name, params in LEARNERS:
        cells = [f"{micros_per_event(name, params, d, args.events):.1f} us" for d in DIMS]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
