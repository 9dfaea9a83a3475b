"""The learner registry: stable names -> learner classes.

Learner classes register themselves with :func:`register`. :func:`discover`
imports every sub-package of :mod:`learners` once, so a new family only has to
exist (and decorate its classes) to be found; nothing central lists them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any, TypeVar

from learners.base import Learner, LearnerInfo

__all__ = ["available", "discover", "from_state_dict", "get", "make", "register"]

_REGISTRY: dict[str, type[Learner]] = {}
_DISCOVERED = False
_SKIP = {"learners.checks"}

L = TypeVar("L", bound=type[Learner])


def register(cls: L) -> L:
    """Class decorator: add ``cls`` to the registry under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no registry name")
    existing = _REGISTRY.get(cls.name)
    if existing is not None and existing is not cls:
        raise ValueError(f"learner name {cls.name!r} is already taken by {existing.__name__}")
    _REGISTRY[cls.name] = cls
    return cls


def discover() -> None:
    """Import all learner families so that their classes register themselves."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    import learners

    for mod in pkgutil.walk_packages(learners.__path__, prefix="learners."):
        if any(mod.name == s or mod.name.startswith(s + ".") for s in _SKIP):
            continue
        importlib.import_module(mod.name)
    _DISCOVERED = True


def get(name: str) -> type[Learner]:
    """The learner class registered under ``name``."""
    discover()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown learner {name!r}; available: {', '.join(sorted(_REGISTRY))}"
        ) from None


def make(name: str, *, n_features: int, n_tasks: int, seed: int = 0, **params: Any) -> Learner:
    """Build the learner ``name`` with the given shape, seed and hyperparameters."""
    return get(name)(n_features=n_features, n_tasks=n_tasks, seed=seed, **params)


def available() -> list[LearnerInfo]:
    """Descriptions of every registered learner, sorted by name."""
    discover()
    return [_REGISTRY[n].info() for n in sorted(_REGISTRY)]


def from_state_dict(state: Mapping[str, Any]) -> Learner:
    """Rebuild any registered learner from its ``state_dict``."""
    name = state.get("learner")
    if not isinstance(name, str):
        raise ValueError("state has no learner name")
    return get(name).from_state_dict(state)
