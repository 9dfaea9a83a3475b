"""Online multitask learners: pure mathematics on numpy, scipy and numba.

Use :func:`make` to build a learner by its registry name and :func:`available`
to list them::

    >>> import numpy as np, learners
    >>> model = learners.make("cmtl", n_features=3, n_tasks=2)
    >>> model.learn_one(np.array([1.0, 0.0, 0.5]), 1, task=0)
    >>> model.predict_one(np.array([1.0, 0.0, 0.5]), task=1)
    1

Learners with compiled kernels compile them at first use (numba, cached on
disk); call :func:`warm_kernels` once at start-up so that no call compiles.
Optional capabilities are declared by class flags (``is_active``,
``reports_query_probability``, ``reports_outliers``; see :mod:`learners.base`)
and reached through :func:`query_probability_reporter` and
:func:`outlier_reporter`. The package never imports :mod:`service`.
"""

from __future__ import annotations

from learners.compile_cache import use_source_keyed_cache

# Before any kernel is defined: numba picks a kernel's cache directory then.
use_source_keyed_cache()

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
from learners.kernels import warm_kernels  # noqa: E402
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
    "from_state_dict",
    "get",
    "make",
    "outlier_reporter",
    "query_probability_reporter",
    "register",
    "warm_kernels",
]
