"""Active-learning wrappers: rules that decide which labels to ask for.

:mod:`learners.active.selective` holds the selective-sampling rule of
Cesa-Bianchi, Gentile & Zaniboni (2006), which turns any margin learner of the
registry into an active one, and is the base class of per-task variants such as
AMLC's "Independent" baseline. :mod:`learners.active.committees` runs AMLC's
committee and PEER's peer queries over the per-task margins of another learner
(the adaptive learners by default).
"""

from __future__ import annotations

from learners.active.selective import SelectiveSampling

__all__ = ["SelectiveSampling"]
