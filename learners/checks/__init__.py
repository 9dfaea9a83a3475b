"""The conformance suite every registered learner must pass.

Like River's estimator checks, it ships with the package: ``yield_checks``
gives the checks that apply to a learner class, and each check takes a
factory that builds a fresh learner. ``tests/learners/test_conformance.py``
runs every check on every registered learner and every entry of its
``conformance_params``. A learner opts out of a check only through its
``check_exemptions`` mapping, whose values are the written reasons.

    >>> from learners import checks
    >>> names = [c.__name__ for c in checks.yield_checks(learners_get("ipl"))]
    >>> "check_state_round_trip" in names
    True
"""

from __future__ import annotations

from learners.checks.common import ALL_CHECKS, yield_checks
from learners.checks.streams import Stream, related_tasks
from learners.registry import get as learners_get

__all__ = ["ALL_CHECKS", "Stream", "learners_get", "related_tasks", "yield_checks"]
