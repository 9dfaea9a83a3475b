"""Evaluation protocols, discovered as plug-ins.

Every module in this package that defines ``NAME: str`` and::

    run(dataset: Dataset, learner: str, params: dict[str, Any], *, runs: int,
        seed: int, budget: int | None,
        progress: Callable[[int, int], None] | None = None) -> dict[str, Any]

is a protocol: ``omtl evaluate --protocol NAME`` runs it. ``run`` returns the
full JSON document (keys ``dataset``, ``learner``, ``params``, ``protocol``,
``runs``, ``metrics``, ``per_task``, ``relation_matrix``, ``weight_correlation``
and optional extras); ``progress(done, total)`` reports work done. Adding a
protocol means adding a module; nothing here lists them. Shared helpers are in
:mod:`evaluation.common`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any, Protocol, cast

from evaluation.dataset import Dataset

__all__ = ["EvaluationProtocol", "available", "get"]


class EvaluationProtocol(Protocol):
    """The interface of a protocol module."""

    NAME: str

    def run(
        self,
        dataset: Dataset,
        learner: str,
        params: dict[str, Any],
        *,
        runs: int,
        seed: int,
        budget: int | None,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Evaluate ``learner`` on ``dataset`` and return the JSON document."""


def available() -> dict[str, EvaluationProtocol]:
    """Every protocol module in this package, by its ``NAME``."""
    found: dict[str, EvaluationProtocol] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        name = getattr(module, "NAME", None)
        if isinstance(name, str) and callable(getattr(module, "run", None)):
            found[name] = cast(EvaluationProtocol, module)
    return found


def get(name: str) -> EvaluationProtocol:
    """The protocol called ``name``."""
    protocols = available()
    if name not in protocols:
        raise ValueError(f"unknown protocol {name!r}; available: {', '.join(sorted(protocols))}")
    return protocols[name]
