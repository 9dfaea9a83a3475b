"""Compile time of the learner kernels: a fresh numba cache, then the same cache again.

:func:`compile_times` runs this module twice in subprocesses sharing a new,
empty ``NUMBA_CACHE_DIR``: the first run compiles (and fills the cache), the
second loads the machine code from it, as a restarted worker does. Each run
reports, in CPU seconds (``time.process_time``):

* ``warm``: :func:`learners.warm_kernels`, per registered warm-up (family);
* ``first_use``: per learner, after the warm-up, making the learner and one
  ``score_and_learn_many`` on a dense and on a CSR block, then ``predict_one`` and
  ``learn_one``, minus the same calls on a second learner. What is left is
  compilation (or cache loading) that the warm-up did not cover.

``python -m bench.perf.throughput_compile`` prints the JSON of one run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["compile_times", "first_use"]

#: Rows and features of the small blocks of the first use.
ROWS, FEATURES, TASKS = 8, 20, 3


def first_use(name: str) -> float | str:
    """CPU seconds of the first use of learner ``name`` beyond a second use (or the error)."""
    try:
        return _first_use(name)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:160]


def _first_use(name: str) -> float:
    import learners
    from bench.perf.throughput_ours import learner_params

    rng = np.random.default_rng(0)
    X = rng.standard_normal((ROWS, FEATURES))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(ROWS) < 0.5, 1.0, -1.0)
    task = np.arange(ROWS) % TASKS
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.2, X, 0.0))

    def use() -> float:
        t0 = time.process_time()
        model = learners.make(
            name, n_features=FEATURES, n_tasks=TASKS, seed=0, **learner_params(name, 10 * ROWS)
        )
        model.score_and_learn_many(X, y, task)
        model.score_and_learn_many(Xs, y, task)
        model.predict_one(X[0], 0)
        model.learn_one(X[0], 1.0, 0)
        return time.process_time() - t0

    return use() - use()


def run_once() -> dict[str, Any]:
    """One run in this process (its numba cache is ``NUMBA_CACHE_DIR``)."""
    import learners

    t0 = time.process_time()
    warm = learners.warm_kernels()
    warm_cpu = time.process_time() - t0
    first = {info.name: first_use(info.name) for info in learners.available()}
    return {"warm_cpu": warm_cpu, "warm_wall_by_family": warm, "first_use": first}


def compile_times(timeout: float = 1800.0) -> dict[str, Any]:
    """``{"empty_cache": run, "filled_cache": run}`` from two subprocesses (see above)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="omtl-numba-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for key in ("empty_cache", "filled_cache"):
            proc = subprocess.run(
                [sys.executable, "-m", "bench.perf.throughput_compile"],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
            if proc.returncode:
                out[key] = {"error": proc.stderr.strip().splitlines()[-1:]}
            else:
                out[key] = json.loads(proc.stdout)
    return out


if __name__ == "__main__":
    print(json.dumps(run_once()))
