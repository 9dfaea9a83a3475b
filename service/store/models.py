"""Model configurations: create, reconfigure, read and delete models.

A model is one learner (registry name and hyperparameters) with its feature
dimension and initial tasks, stored in the hash ``omtl:{m}:config`` and listed
in the set ``omtl:models``. :func:`put_model` validates the learner name and
hyperparameters by building the learner. Reconfiguring a model (any change of
learner, params, n_features, tasks or seed) bumps its ``generation`` and clears
its log, snapshot and label bookkeeping: the model starts afresh, and a worker
seeing the new generation rebuilds its state.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import numpy as np
import redis
import redis.asyncio as aredis
from pydantic import BaseModel, Field

import learners
from learners import Learner
from service.settings import Settings
from service.store import keys
from service.store.snapshot import Snapshot

__all__ = [
    "ModelConfig",
    "delete_model",
    "delete_model_async",
    "ensure_default_model",
    "get_model",
    "get_model_async",
    "initial_learner",
    "initial_snapshot",
    "list_models",
    "list_models_async",
    "put_model",
    "put_model_async",
    "validate_model_name",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


class ModelConfig(BaseModel):
    """One model's configuration (the ``omtl:{m}:config`` hash)."""

    learner: str = Field(description="Registry name of the learner, e.g. 'cmtl'.")
    params: dict[str, Any] = Field(default_factory=dict, description="Hyperparameters.")
    n_features: int = Field(ge=1, description="Feature dimension d.")
    tasks: list[str] = Field(default_factory=list, description="Initial task names.")
    seed: int = Field(default=0, ge=0, description="Seed of the learner's generator.")
    kind: str | None = Field(
        default=None, description="'classification' or 'regression' (set from the learner)."
    )
    generation: int = Field(default=0, description="Bumped on every reconfiguration.")
    created: float = Field(default=0.0, description="Creation time (epoch seconds).")

    def same_model(self, other: ModelConfig) -> bool:
        """Whether both describe the same learner (ignoring generation and times)."""
        return (
            self.learner == other.learner
            and _canonical(self.params) == _canonical(other.params)
            and self.n_features == other.n_features
            and self.tasks == other.tasks
            and self.seed == other.seed
        )


def _canonical(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=_json_default)


def _json_default(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"not JSON serialisable: {type(v).__name__}")


def validate_model_name(name: str) -> str:
    """Return ``name`` if it is a valid model name, else raise ``ValueError``."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"invalid model name {name!r}: 1-64 characters from letters, digits, '_', '.', '-', "
            "starting with a letter or digit"
        )
    return name


def initial_learner(config: ModelConfig) -> Learner:
    """The untrained learner of ``config``.

    It has ``max(1, len(tasks))`` tasks: with no initial task the first slot is
    given to the first task name the worker sees. Raises ``ValueError`` on an
    unknown learner or invalid hyperparameters.
    """
    if len(set(config.tasks)) != len(config.tasks):
        raise ValueError("initial task names must be unique")
    if any(not t for t in config.tasks):
        raise ValueError("task names must not be empty")
    try:
        return learners.make(
            config.learner,
            n_features=config.n_features,
            n_tasks=max(1, len(config.tasks)),
            seed=config.seed,
            **config.params,
        )
    except TypeError as exc:
        raise ValueError(f"invalid hyperparameters for {config.learner!r}: {exc}") from None


def initial_snapshot(name: str, config: ModelConfig) -> Snapshot:
    """Version-0 state of a model: the initial learner before any log entry."""
    return Snapshot(
        version=0,
        generation=config.generation,
        learner=initial_learner(config),
        task_names=list(config.tasks),
        last_id="0-0",
        created=config.created or time.time(),
        model=name,
    )


def _to_hash(config: ModelConfig) -> dict[str, str]:
    return {
        "learner": config.learner,
        "params": _canonical(config.params),
        "n_features": str(config.n_features),
        "tasks": json.dumps(config.tasks),
        "seed": str(config.seed),
        "kind": config.kind or "",
        "generation": str(config.generation),
        "created": repr(config.created),
    }


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _from_hash(h: dict[Any, Any]) -> ModelConfig | None:
    if not h:
        return None
    f = {_text(k): _text(v) for k, v in h.items()}
    return ModelConfig(
        learner=f["learner"],
        params=json.loads(f.get("params", "{}")),
        n_features=int(f["n_features"]),
        tasks=json.loads(f.get("tasks", "[]")),
        seed=int(f.get("seed", "0")),
        kind=f.get("kind") or None,
        generation=int(f.get("generation", "0")),
        created=float(f.get("created", "0")),
    )


def _prepared(name: str, config: ModelConfig, existing: ModelConfig | None) -> ModelConfig:
    """Validate ``config`` and fill in kind, generation and created."""
    validate_model_name(name)
    learner = initial_learner(config)
    kind = learner.label_kind
    if existing is not None and existing.same_model(config):
        return existing
    return config.model_copy(
        update={
            "kind": kind,
            "generation": 1 if existing is None else existing.generation + 1,
            "created": time.time(),
        }
    )


def _reset_keys(name: str) -> list[str]:
    """Keys cleared when a model is reconfigured."""
    return [
        keys.log_key(name),
        keys.snapshot_key(name),
        keys.labels_key(name),
        keys.progress_key(name),
    ]


def _all_keys(name: str) -> list[str]:
    return [
        keys.config_key(name),
        keys.log_key(name),
        keys.queries_key(name),
        keys.snapshot_key(name),
        keys.labels_key(name),
        keys.dead_key(name),
        keys.alerts_key(name),
        keys.lease_key(name),
        keys.heartbeat_key(name),
        keys.progress_key(name),
    ]


# ---------------------------------------------------------------- sync client
def get_model(r: redis.Redis, name: str) -> ModelConfig | None:
    """The configuration of model ``name``, or None."""
    return _from_hash(r.hgetall(keys.config_key(name)))


def list_models(r: redis.Redis) -> list[str]:
    """All model names, sorted."""
    return sorted(_text(m) for m in r.smembers(keys.models_key()))


def put_model(r: redis.Redis, name: str, config: ModelConfig) -> ModelConfig:
    """Create model ``name`` or reconfigure it; returns the stored configuration.

    Raises ``ValueError`` with a message for an invalid name, an unknown learner
    or invalid hyperparameters. Putting an unchanged configuration is a no-op.
    """
    existing = get_model(r, name)
    stored = _prepared(name, config, existing)
    if stored is existing:
        return stored
    with r.pipeline(transaction=True) as p:
        if existing is not None:
            p.delete(*_reset_keys(name))
        p.delete(keys.config_key(name))
        p.hset(keys.config_key(name), mapping=_to_hash(stored))  # type: ignore[arg-type]
        p.sadd(keys.models_key(), name)
        p.execute()
    return stored


def delete_model(r: redis.Redis, name: str) -> bool:
    """Remove model ``name`` and all its keys; False when it did not exist."""
    with r.pipeline(transaction=True) as p:
        p.srem(keys.models_key(), name)
        p.delete(*_all_keys(name))
        removed, _ = p.execute()
    return bool(removed)


def ensure_default_model(r: redis.Redis, settings: Settings) -> ModelConfig | None:
    """Create the settings' default model unless a model of that name exists.

    Returns the model's configuration (None when no default model is configured).
    Raises ``ValueError`` when the configured learner or params are invalid.
    """
    if not settings.default_model:
        return None
    existing = get_model(r, settings.default_model)
    if existing is not None:
        return existing
    return put_model(
        r,
        settings.default_model,
        ModelConfig(
            learner=settings.default_learner,
            params=settings.default_params,
            n_features=settings.default_n_features,
            tasks=settings.default_tasks,
        ),
    )


# ---------------------------------------------------------------- asyncio client
async def get_model_async(r: aredis.Redis, name: str) -> ModelConfig | None:
    """:func:`get_model` for an asyncio client."""
    return _from_hash(await r.hgetall(keys.config_key(name)))


async def list_models_async(r: aredis.Redis) -> list[str]:
    """:func:`list_models` for an asyncio client."""
    return sorted(_text(m) for m in await r.smembers(keys.models_key()))


async def put_model_async(r: aredis.Redis, name: str, config: ModelConfig) -> ModelConfig:
    """:func:`put_model` for an asyncio client."""
    existing = await get_model_async(r, name)
    stored = _prepared(name, config, existing)
    if stored is existing:
        return stored
    async with r.pipeline(transaction=True) as p:
        if existing is not None:
            p.delete(*_reset_keys(name))
        p.delete(keys.config_key(name))
        p.hset(keys.config_key(name), mapping=_to_hash(stored))  # type: ignore[arg-type]
        p.sadd(keys.models_key(), name)
        await p.execute()
    return stored


async def delete_model_async(r: aredis.Redis, name: str) -> bool:
    """:func:`delete_model` for an asyncio client."""
    async with r.pipeline(transaction=True) as p:
        p.srem(keys.models_key(), name)
        p.delete(*_all_keys(name))
        removed, _ = await p.execute()
    return bool(removed)
