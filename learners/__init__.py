"""Online multitask learners: pure mathematics on numpy, scipy and numba.

Use :func:`make` to build a learner by its registry name and :func:`available`
to list them::

    >>> import numpy as np, learners
    >>> model = learners.make("cmtl", n_features=3, n_tasks=2)
    >>> model.learn_one(np.array([1.0, 0.0, 0.5]), 1, task=0)
    >>> model.predict_one(np.array([1.0, 0.0, 0.5]), task=1)
    1

Learners with compiled kernels compile them at first use (numba, cached on
disk); call :func:`ensure_kernels` once at start-up so that no call compiles,
then :func:`load_kernels` for each learner the process serves (or
:func:`warm_kernels`, which loads every kernel into the process).
Optional capabilities are declared by class flags (``is_active``,
``reports_query_probability``, ``reports_outliers``; see :mod:`learners.base`)
and reached through :func:`query_probability_reporter` and
:func:`outlier_reporter`. The package never imports :mod:`service`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from learners.compile_cache import is_complete, mark_complete, use_source_keyed_cache

# Before any kernel is defined: numba picks a kernel's cache directory then.
_CACHE_DIRECTORY = use_source_keyed_cache()

from learners.base import (  # noqa: E402
    Learner,
    LearnerInfo,
    OutlierReporter,
    Param,
    QueryProbabilityReporter,
    outlier_reporter,
    query_probability_reporter,
)
from learners.inputs import Vec, as_vector  # noqa: E402
from learners.kernels import exercise_learner, warm_kernels  # noqa: E402
from learners.registry import available, from_state_dict, get, make, register  # noqa: E402

__all__ = [
    "Learner",
    "LearnerInfo",
    "OutlierReporter",
    "Param",
    "QueryProbabilityReporter",
    "Vec",
    "as_vector",
    "available",
    "ensure_kernels",
    "kernels_cached",
    "kernels_loaded",
    "load_kernels",
    "from_state_dict",
    "get",
    "make",
    "outlier_reporter",
    "query_probability_reporter",
    "register",
    "warm_kernels",
]


_ensured = False
_loaded = False
_loaded_for: set[str] = set()


def kernels_cached() -> bool:
    """Whether numba's cache holds every kernel of these sources (marked by a full
    warm-up: :func:`ensure_kernels`)."""
    return is_complete(_CACHE_DIRECTORY)


def ensure_kernels(load: bool = False) -> bool:
    """Make sure no learner call of this process compiles; returns whether it compiled.

    Where numba's cache holds every kernel of these sources (the mark of a full
    warm-up, :mod:`learners.compile_cache`), nothing is loaded unless ``load``: each
    kernel then loads from the cache at its first call (0.05-0.3 s for a family's
    largest kernels, once per process). ``load=True`` loads every kernel now, for a
    process whose first calls must not wait (the API's requests, the worker's first step).
    Where the cache lacks some kernel, :func:`warm_kernels` runs (compiling what is
    missing, then loading every kernel) and marks the cache complete for the processes
    after this one. Later calls in the same process do only what is still to do.
    """
    global _ensured, _loaded
    compiled = False
    if not _ensured:
        compiled = not kernels_cached()
        if compiled:
            warm_kernels()
            mark_complete(_CACHE_DIRECTORY)
            _loaded = True
        _ensured = True
    if load and not _loaded:
        warm_kernels()
        _loaded = True
    return compiled


def load_kernels(learner: str, params: Mapping[str, Any] | None = None) -> bool:
    """Load into this process the kernels that the learner registered as ``learner``, with
    the hyperparameters ``params``, uses; returns whether this call loaded anything.

    For a process that serves a few models (a worker, the API): loading every family's
    kernels (:func:`ensure_kernels` with ``load=True``) costs 2-3 s of CPU at each start,
    one learner's 0.3-0.9 s. The learner runs once on tiny inputs
    (:func:`learners.kernels.exercise_learner`), with ``params`` where they fit a learner
    of that shape, else with the defaults; a kernel that run leaves out loads from the
    cache at its first call. Calls :func:`ensure_kernels` first, so nothing compiles later
    where the cache lacked some kernel. A repeated call costs a set look-up.
    """
    if kernels_loaded(learner, params):
        return False
    ensure_kernels()
    try:
        exercise_learner(learner, **(params or {}))
    except (TypeError, ValueError):  # hyperparameters tied to the model's shape (task_dims)
        exercise_learner(learner)
    _loaded_for.add(_kernels_key(learner, params))
    return True


def kernels_loaded(learner: str, params: Mapping[str, Any] | None = None) -> bool:
    """Whether :func:`load_kernels` (or a full load) already ran for this learner and
    hyperparameters in this process: a set look-up, for a caller that would otherwise
    hand the call to a thread for nothing."""
    return _loaded or _kernels_key(learner, params) in _loaded_for


def _kernels_key(learner: str, params: Mapping[str, Any] | None) -> str:
    return f"{learner}\0{sorted((params or {}).items())!r}"
