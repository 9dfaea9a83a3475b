"""The API's in-memory models: one immutable :class:`ModelView` per model, swapped on change.

A view holds a model's configuration and the latest snapshot (or the initial
state when the worker has written none yet). Views are never mutated: when
Redis reports a newer snapshot ``version`` or a new configuration
``generation``, the cache builds a new view and swaps the reference, so a
request that holds a view keeps a consistent learner without locks.
Concurrent requests that see the same new version share one reload.

Unseen tasks are scored as the worker will first see them
(:meth:`service.store.snapshot.Snapshot.learner_for_task`): in the learner's next free
slot, else in a task added to a copy of the learner. The copy is made once per
view and reused for every unseen task name, and only when the model's
:class:`~service.store.models.ModelLimits` allow one more task (else
:class:`~service.store.models.ModelTooLarge`, a 409).

Views are keyed by the configuration ``generation``, which is also the model's
incarnation id: a model deleted and created again under the same name is never
served from its predecessor's view or snapshot.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import learners
from learners import Learner
from service.api.errors import ModelFailed
from service.store import STORE_UNAVAILABLE, AsyncStore, StoreReplyError, keys
from service.store.models import (
    ModelConfig,
    ModelLimits,
    expected_state,
    get_model_async,
    initial_snapshot,
)
from service.store.snapshot import Snapshot, read_snapshot_async

__all__ = ["FAILED_RETRY_S", "ModelCache", "ModelView"]

log = logging.getLogger("omtl.api")

#: Seconds a model that could not be loaded is answered from memory (503) before the
#: cache tries again, so a corrupt snapshot is not decoded on every request.
FAILED_RETRY_S = 1.0


@dataclass(frozen=True)
class ModelView:
    """A model's configuration and snapshot at one version (never mutated once built)."""

    name: str
    config: ModelConfig
    snapshot: Snapshot
    task_index: dict[str, int]
    limits: ModelLimits = field(default_factory=ModelLimits)
    _fresh: dict[str, tuple[Learner, int]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls,
        name: str,
        config: ModelConfig,
        snapshot: Snapshot,
        limits: ModelLimits | None = None,
    ) -> ModelView:
        """A view over ``snapshot`` (use :func:`initial_snapshot` when there is none)."""
        index = {t: i for i, t in enumerate(snapshot.task_names)}
        return cls(name, config, snapshot, index, limits or ModelLimits())

    @property
    def version(self) -> int:
        """The snapshot version (0 before the worker's first snapshot)."""
        return self.snapshot.version

    @property
    def generation(self) -> int:
        """The configuration generation the view belongs to."""
        return self.config.generation

    @property
    def n_features(self) -> int:
        """The model's feature dimension."""
        return self.config.n_features

    @property
    def regression(self) -> bool:
        """Whether the model predicts real values rather than +1/-1."""
        return self.snapshot.learner.label_kind == "regression"

    def label_problem(self, y: float) -> str | None:
        """Why ``y`` cannot be a label of this model (completes "y ..."), or None: not -1
        or +1 for a classification model, beyond the learner's largest target
        (``max_target_magnitude``) for a regression one."""
        learner = self.snapshot.learner
        if not self.regression:
            if y in (-1.0, 1.0):
                return None
            return f"must be -1 or +1 for the classification model {self.name!r}, got {y!r}"
        limit = learner.max_target_magnitude
        if limit is None or abs(y) <= limit:
            return None
        return (
            f"must be at most {limit:g} in magnitude for the model {self.name!r} "
            f"(learner {learner.name}), got {y!r}"
        )

    def score(self, x: Any, task: str) -> float:
        """The learner's signed score of ``x`` for the task named ``task``."""
        idx = self.task_index.get(task)
        if idx is not None:
            return self.snapshot.learner.decision_one(x, idx)
        fresh = self._fresh.get("")
        if fresh is None:
            self.admit((task,))
            fresh = self.snapshot.learner_for_task(task)
            self._fresh[""] = fresh
        learner, slot = fresh
        return learner.decision_one(x, slot)

    def admit(self, tasks: Sequence[str]) -> None:
        """Raise :class:`~service.store.models.ModelTooLarge` (a 409) when the task names
        the model has not seen among ``tasks`` would take it over its limits; called
        before anything is appended."""
        index = self.task_index
        if all(t in index for t in tasks):
            return
        k = len(self.snapshot.task_names) + len({t for t in tasks if t not in index})
        if k > self.snapshot.learner.n_tasks:
            cfg = self.config
            self.limits.check(cfg.learner, cfg.n_features, k, cfg.params)

    def label(self, score: float) -> float:
        """The predicted label of a score: +1/-1 (ties +1), or the score for regression."""
        if self.regression:
            return score
        return 1.0 if score >= 0.0 else -1.0

    def age_seconds(self) -> float | None:
        """Seconds since the snapshot was written, or None before the first one."""
        return None if self.version == 0 else max(0.0, time.time() - self.snapshot.created)

    def task_counters(self) -> dict[str, np.ndarray]:
        """Per-task counters, each of length ``len(task_names)``."""
        k = len(self.snapshot.task_names)
        return {name: arr[:k] for name, arr in self.snapshot.counters.items()}


class ModelCache:
    """Views of every model this process has served, refreshed on demand."""

    def __init__(self, redis: AsyncStore, limits: ModelLimits | None = None) -> None:
        self._redis = redis
        self._limits = limits or ModelLimits()
        self._views: dict[str, ModelView] = {}
        self._loading: dict[str, asyncio.Task[ModelView | None]] = {}
        #: models that could not be loaded -> (monotonic time of the next try, reason)
        self._failed: dict[str, tuple[float, str]] = {}

    def cached(self, name: str) -> ModelView | None:
        """The current view of ``name`` without asking Redis."""
        return self._views.get(name)

    def forget(self, name: str) -> None:
        """Drop the view of ``name`` (after a delete or reconfiguration)."""
        self._views.pop(name, None)
        self._failed.pop(name, None)

    async def get(self, name: str) -> ModelView | None:
        """The cached view, or a freshly loaded one; None for an unknown model."""
        view = self._views.get(name)
        if view is not None:
            return view
        return await self.reload(name)

    async def current(self, name: str) -> ModelView | None:
        """The view at the generation and version Redis has now (one round trip if unchanged)."""
        async with self._redis.pipeline(transaction=False) as p:
            p.hget(keys.config_key(name), "generation")
            p.hget(keys.snapshot_key(name), "version")
            generation, version = await p.execute()
        if generation is None:  # no model, or a config without a generation (reported)
            return await self.reload(name)
        try:
            numbers = int(generation), int(version or 0)
        except ValueError:  # a corrupt config or snapshot: the reload reports it
            return await self.reload(name)
        return await self.at(name, *numbers)

    def cached_at(self, name: str, generation: int, version: int) -> ModelView | None:
        """The cached view if it is at ``generation`` and at least ``version``, else None."""
        view = self._views.get(name)
        if view is not None and view.generation == generation and view.version >= version:
            return view
        return None

    async def at(self, name: str, generation: int, version: int) -> ModelView | None:
        """A view at least as new as ``generation`` / ``version``; reloads only if needed."""
        return self.cached_at(name, generation, version) or await self.reload(name)

    async def reload(self, name: str) -> ModelView | None:
        """Load the configuration and snapshot of ``name``; concurrent callers share one load.

        Raises :class:`~service.api.errors.ModelFailed` (503) when they cannot be
        loaded (malformed, foreign or over the limits); the failure is remembered
        for :data:`FAILED_RETRY_S`.
        """
        failed = self._failed.get(name)
        if failed is not None and failed[0] > time.monotonic():
            raise ModelFailed(name, failed[1])
        task = self._loading.get(name)
        if task is None:
            task = asyncio.ensure_future(self._load(name))
            self._loading[name] = task
            task.add_done_callback(lambda _: self._loading.pop(name, None))
        return await asyncio.shield(task)

    async def _load(self, name: str) -> ModelView | None:
        try:
            return await self._load_view(name)
        except STORE_UNAVAILABLE:
            raise
        except (ValueError, StoreReplyError, MemoryError) as exc:
            reason = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            log.error("model %r cannot be loaded: %s", name, reason)
            self._views.pop(name, None)
            self._failed[name] = (time.monotonic() + FAILED_RETRY_S, reason)
            raise ModelFailed(name, reason) from None

    async def _load_view(self, name: str) -> ModelView | None:
        config = await get_model_async(self._redis, name)
        if config is None:
            self.forget(name)
            return None
        limits = self._limits
        limits.check(config.learner, config.n_features, max(1, len(config.tasks)), config.params)
        snapshot = await read_snapshot_async(self._redis, name, expected_state(config, limits))
        self._failed.pop(name, None)
        if snapshot is None or snapshot.generation != config.generation:
            version = 0 if snapshot is None else snapshot.version
            snapshot = initial_snapshot(name, config)
            snapshot.version = version
        # the learner's kernels, off the event loop (once per learner and process: a reload
        # for a new snapshot version only looks them up)
        if not learners.kernels_loaded(config.learner, config.params):
            await asyncio.to_thread(learners.load_kernels, config.learner, config.params)
        view = ModelView.build(name, config, snapshot, self._limits)
        self._views[name] = view
        return view
