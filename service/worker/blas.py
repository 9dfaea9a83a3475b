"""Keep BLAS single-threaded in the worker.

The worker applies one model's log sequentially, and on a small machine the
Redis server and the API share the cores: a multi-threaded BLAS then only adds
contention to the small matrix products of the batch path. Environment
variables (``OPENBLAS_NUM_THREADS=1``) work only before numpy is imported, so
this sets the thread count of the OpenBLAS libraries shipped in the numpy and
scipy wheels directly, best effort.
"""

from __future__ import annotations

import contextlib
import ctypes
from pathlib import Path

import numpy as np
import scipy

__all__ = ["single_thread_blas"]

_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def single_thread_blas() -> int:
    """Set every bundled OpenBLAS to one thread; returns how many libraries were set."""
    done = 0
    for package in (np, scipy):
        libs = Path(package.__file__ or "").resolve().parent.parent / f"{package.__name__}.libs"
        for path in sorted(libs.glob("libscipy_openblas*.so*")) if libs.is_dir() else []:
            with contextlib.suppress(OSError):
                lib = ctypes.CDLL(str(path))
                for name in _SETTERS:
                    setter = getattr(lib, name, None)
                    if setter is not None:
                        setter(ctypes.c_int(1))
                        done += 1
                        break
    return done
