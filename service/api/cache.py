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
view and reused for every unseen task name.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from learners import Learner
from service.store import AsyncStore, keys
from service.store.models import ModelConfig, get_model_async, initial_snapshot
from service.store.snapshot import Snapshot, read_snapshot_async

__all__ = ["ModelCache", "ModelView"]


@dataclass(frozen=True)
class ModelView:
    """A model's configuration and snapshot at one version (never mutated once built)."""

    name: str
    config: ModelConfig
    snapshot: Snapshot
    task_index: dict[str, int]
    _fresh: dict[str, tuple[Learner, int]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, name: str, config: ModelConfig, snapshot: Snapshot) -> ModelView:
        """A view over ``snapshot`` (use :func:`initial_snapshot` when there is none)."""
        index = {t: i for i, t in enumerate(snapshot.task_names)}
        return cls(name, config, snapshot, index)

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

    def score(self, x: Any, task: str) -> float:
        """The learner's signed score of ``x`` for the task named ``task``."""
        idx = self.task_index.get(task)
        if idx is not None:
            return self.snapshot.learner.decision_one(x, idx)
        fresh = self._fresh.get("")
        if fresh is None:
            fresh = self.snapshot.learner_for_task(task)
            self._fresh[""] = fresh
        learner, slot = fresh
        return learner.decision_one(x, slot)

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

    def __init__(self, redis: AsyncStore) -> None:
        self._redis = redis
        self._views: dict[str, ModelView] = {}
        self._loading: dict[str, asyncio.Task[ModelView | None]] = {}

    def cached(self, name: str) -> ModelView | None:
        """The current view of ``name`` without asking Redis."""
        return self._views.get(name)

    def forget(self, name: str) -> None:
        """Drop the view of ``name`` (after a delete or reconfiguration)."""
        self._views.pop(name, None)

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
        if generation is None:
            self.forget(name)
            return None
        return await self.at(name, int(generation), int(version or 0))

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
        """Load the configuration and snapshot of ``name``; concurrent callers share one load."""
        task = self._loading.get(name)
        if task is None:
            task = asyncio.ensure_future(self._load(name))
            self._loading[name] = task
            task.add_done_callback(lambda _: self._loading.pop(name, None))
        return await asyncio.shield(task)

    async def _load(self, name: str) -> ModelView | None:
        config = await get_model_async(self._redis, name)
        if config is None:
            self.forget(name)
            return None
        snapshot = await read_snapshot_async(self._redis, name)
        if snapshot is None or snapshot.generation != config.generation:
            version = 0 if snapshot is None else snapshot.version
            snapshot = initial_snapshot(name, config)
            snapshot.version = version
        view = ModelView.build(name, config, snapshot)
        self._views[name] = view
        return view
