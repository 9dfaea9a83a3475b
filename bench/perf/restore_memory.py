"""Memory a restore allocates: a learner rebuilt from its ``state_dict``, against the state's size.

A worker restores a model from its snapshot at start-up and after a failover
(:func:`service.store.snapshot.decode` reads the archive, then
:func:`learners.from_state_dict` builds the learner). The source arrays are held
until the learner exists, so a restore needs at least the state's size again; this
prints what it takes beyond that. For each learner and width it builds the learner,
takes its ``state_dict`` and measures, with :mod:`tracemalloc` (numpy reports its
allocations to it), the peak of new allocations while ``from_state_dict`` runs, in MB
and as a multiple of the state's arrays (1.00: the restored learner's own arrays and
nothing more). Wide adaptive learners lay their state out by feature
(docs/algorithms.md Sec. 11.4), which a restore must reproduce.

Usage: ``python -m bench.perf.restore_memory [--features 100000] [--tasks 10]``
"""

from __future__ import annotations

import argparse
import tracemalloc

import numpy as np

import learners

LEARNERS = ("adaptive-logistic", "adaptive", "adaptive-auto", "cmtl")


def restore_peak(name: str, n_features: int, n_tasks: int) -> tuple[int, int, int]:
    """``(state bytes, bytes the restored learner holds, peak bytes allocated)`` of one
    restore of a fresh ``name`` learner."""
    model = learners.make(name, n_features=n_features, n_tasks=n_tasks)
    state = model.state_dict()
    size = sum(v.nbytes for v in state.values() if isinstance(v, np.ndarray))
    del model
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        restored = learners.from_state_dict(state)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del restored
    return size, held - start, peak - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=10)
    args = parser.parse_args(argv)
    print(f"d = {args.features:,}, K = {args.tasks}\n")
    print("| learner | state | restored learner holds | peak during the restore | peak / state |")
    print("|---|---:|---:|---:|---:|")
    for name in LEARNERS:
        size, held, peak = restore_peak(name, args.features, args.tasks)
        print(
            f"| {name} | {size / 1e6:,.1f} MB | {held / 1e6:,.1f} MB | {peak / 1e6:,.1f} MB "
            f"| {peak / size:.2f} |"
        )


if __name__ == "__main__":
    main()
