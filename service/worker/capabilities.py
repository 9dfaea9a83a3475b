"""What the worker asks of a learner beyond the :class:`learners.Learner` interface.

The one place where the worker probes a learner for optional behaviour: active
querying (``query_one`` overridden or ``is_active``), a query probability
(``query_probability``), and outlier-task reporting (``outlier_tasks`` /
``outlier_scores``, the ROM family).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from learners import Learner

__all__ = ["Capabilities", "probe"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The optional behaviour of one learner."""

    #: True when the learner never declines a label (every unlabelled event is queried).
    passive: bool
    query_probability: Callable[[Any, int], float] | None
    outlier_tasks: Callable[[], Any] | None
    outlier_scores: Callable[[], Any] | None


def _overrides(learner: Learner, name: str) -> bool:
    return getattr(type(learner), name) is not getattr(Learner, name)


def probe(learner: Learner) -> Capabilities:
    """The optional behaviour ``learner`` has."""
    return Capabilities(
        passive=not learner.is_active and not _overrides(learner, "query_one"),
        query_probability=getattr(learner, "query_probability", None),
        outlier_tasks=getattr(learner, "outlier_tasks", None),
        outlier_scores=getattr(learner, "outlier_scores", None),
    )
