"""Compile everything the service runs compiled, once per machine (or image):
``python -m service.warm``.

That is every learner kernel (:func:`learners.ensure_kernels`: compiled into numba's
cache where it lacks some, then the cache marked complete) and the worker's pass over a
batch's task names (:func:`service.worker.task_lookup.warm`), in the same cache. ``make
warm`` runs it after compiling the kernel families in two processes side by side; the
Docker image runs it at build time. See docs/architecture.md, "Compiled learner kernels".
"""

from __future__ import annotations

import learners
from service.worker import task_lookup

__all__ = ["compile_everything"]


def compile_everything() -> bool:
    """Compile (or find in the cache) every kernel the service runs; whether any
    learner kernel had to be compiled."""
    compiled = learners.ensure_kernels()
    task_lookup.warm()
    return compiled


if __name__ == "__main__":
    compile_everything()
