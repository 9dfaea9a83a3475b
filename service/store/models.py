"""Model configurations: create, reconfigure, read and delete models.

A model is one learner (registry name and hyperparameters) with its feature
dimension and initial tasks, stored in the hash ``omtl:{m}:config`` and listed
in the set ``omtl:models``. :func:`put_model` checks the model against its
:class:`ModelLimits` (task count, the learner's estimated state size) before
anything is allocated, then validates the learner name and hyperparameters by
building the learner. Reconfiguring a model (any change of learner, params,
n_features, tasks or seed) bumps its ``generation`` and clears its log,
snapshot, label bookkeeping, label requests and alerts: the model starts
afresh, and a worker seeing the new generation rebuilds its state.

The generation is also the model's **incarnation id**: a new model starts at
the Redis server clock in microseconds and a reconfiguration moves it to
``max(generation + 1, clock)``, so a model deleted and created again under the
same name never shares a generation with its predecessor. Every check that
compares generations (the API's appends, the fenced snapshot write, the
worker's loading, the API's model cache) therefore also tells incarnations
apart (docs/architecture.md, "Models and generations").
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import redis
import redis.asyncio as aredis
from pydantic import BaseModel, Field

import learners
from learners import Learner
from service.settings import Settings
from service.store import keys
from service.store.snapshot import Expected, Snapshot

__all__ = [
    "ConfigInvalid",
    "ModelConfig",
    "ModelLimits",
    "ModelTooLarge",
    "delete_model",
    "delete_model_async",
    "ensure_default_model",
    "expected_state",
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
    generation: int = Field(
        default=0, description="Incarnation id: new per creation, bumped on every reconfiguration."
    )
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


class ConfigInvalid(ValueError):
    """A stored configuration that cannot be read (a missing or malformed field)."""


class ModelTooLarge(ValueError):
    """A model over its :class:`ModelLimits` (too many tasks, or state over the budget)."""


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """Resource limits of one model: its task count and its learner's state size.

    The state size is the learner's own estimate from the shape
    (:meth:`learners.base.Learner.state_bytes`): K x d weights, K x K matrices,
    buffers. It is checked when a model is created or reconfigured and
    whenever a task is added (the API before scoring an unseen task, the
    worker before adding it), before anything is allocated.
    """

    max_bytes: int = 256 * 1024**2
    max_tasks: int = 1000

    @classmethod
    def from_settings(cls, settings: Settings) -> ModelLimits:
        """The limits of ``OMTL_MAX_MODEL_BYTES`` and ``OMTL_MAX_TASKS``."""
        return cls(max_bytes=settings.max_model_bytes, max_tasks=settings.max_tasks)

    def check(self, learner: str, n_features: int, n_tasks: int, params: dict[str, Any]) -> None:
        """Raise :class:`ModelTooLarge` (or ``ValueError`` for an unknown learner or
        hyperparameter) unless a ``learner`` with this shape fits the limits."""
        if n_tasks > self.max_tasks:
            raise ModelTooLarge(
                f"{n_tasks} tasks is over the maximum of {self.max_tasks} tasks per model "
                "(OMTL_MAX_TASKS)"
            )
        try:
            need = learners.get(learner).state_bytes(n_features, n_tasks, **params)
        except TypeError as exc:
            raise ValueError(f"invalid hyperparameters for {learner!r}: {exc}") from None
        if need > self.max_bytes:
            raise ModelTooLarge(
                f"{learner} with {n_features} features and {n_tasks} tasks needs about "
                f"{_size(need)} of state ({need} bytes), over the budget of "
                f"{_size(self.max_bytes)} per model (OMTL_MAX_MODEL_BYTES)"
            )


def expected_state(config: ModelConfig, limits: ModelLimits) -> Expected:
    """What a snapshot of ``config`` must agree with (see :func:`snapshot.decode`)."""
    return Expected(config.learner, config.n_features, limits.max_tasks, limits.max_bytes)


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


def _field(f: dict[str, str], key: str, parse: Any, default: str | None = None) -> Any:
    """Field ``key`` of a config hash, parsed; :class:`ConfigInvalid` naming it otherwise."""
    raw = f.get(key, default)
    if raw is None:
        raise ConfigInvalid(f"model configuration has no field {key!r}")
    try:
        return parse(raw)
    except (ValueError, TypeError):
        raise ConfigInvalid(
            f"model configuration field {key!r} is invalid: {raw[:100]!r}"
        ) from None


def _from_hash(h: dict[Any, Any]) -> ModelConfig | None:
    """The configuration in a config hash; :class:`ConfigInvalid` when it cannot be read."""
    if not h:
        return None
    try:
        f = {_text(k): _text(v) for k, v in h.items()}
    except UnicodeDecodeError:
        raise ConfigInvalid("model configuration is not UTF-8 text") from None
    try:
        return ModelConfig(
            learner=_field(f, "learner", str),
            params=_field(f, "params", json.loads, "{}"),
            n_features=_field(f, "n_features", int),
            tasks=_field(f, "tasks", json.loads, "[]"),
            seed=_field(f, "seed", int, "0"),
            kind=f.get("kind") or None,
            generation=_field(f, "generation", int),
            created=_field(f, "created", float, "0"),
        )
    except ValueError as exc:  # pydantic: a field of the wrong shape (params not an object...)
        if isinstance(exc, ConfigInvalid):
            raise
        reason = " ".join(str(exc).split())[:300]
        raise ConfigInvalid(f"model configuration cannot be read: {reason}") from None


def _prepared(
    name: str,
    config: ModelConfig,
    existing: ModelConfig | None,
    limits: ModelLimits,
    clock_us: int,
) -> ModelConfig:
    """Validate ``config`` (limits first, then by building the learner) and fill in
    kind, generation (the incarnation id, see the module docstring) and created."""
    validate_model_name(name)
    if existing is not None and existing.same_model(config):
        return existing
    limits.check(config.learner, config.n_features, max(1, len(config.tasks)), config.params)
    learner = initial_learner(config)
    previous = 0 if existing is None else existing.generation + 1
    return config.model_copy(
        update={
            "kind": learner.label_kind,
            "generation": max(previous, clock_us),
            "created": time.time(),
        }
    )


def _clock_us(reply: Any) -> int:
    seconds, micros = reply
    return int(seconds) * 1_000_000 + int(micros)


def _reset_keys(name: str) -> list[str]:
    """Keys cleared when a model is reconfigured (the old label requests would be
    answered with 404, the old alerts name tasks the new model does not have)."""
    return [
        keys.log_key(name),
        keys.snapshot_key(name),
        keys.labels_key(name),
        keys.queries_key(name),
        keys.answers_key(name),
        keys.alerts_key(name),
        keys.failed_key(name),
        keys.cuts_key(name),
        keys.quarantine_key(name),
        keys.progress_key(name),
        keys.snapshot_history_key(name),
        keys.history_key(name),
    ]


def _all_keys(name: str) -> list[str]:
    return [
        keys.config_key(name),
        keys.log_key(name),
        keys.queries_key(name),
        keys.answers_key(name),
        keys.snapshot_key(name),
        keys.labels_key(name),
        keys.dead_key(name),
        keys.alerts_key(name),
        keys.lease_key(name),
        keys.heartbeat_key(name),
        keys.failed_key(name),
        keys.cuts_key(name),
        keys.quarantine_key(name),
        keys.progress_key(name),
        keys.snapshot_history_key(name),
        keys.history_key(name),
    ]


# ---------------------------------------------------------------- sync client
def get_model(r: redis.Redis, name: str) -> ModelConfig | None:
    """The configuration of model ``name``, or None."""
    return _from_hash(r.hgetall(keys.config_key(name)))


def list_models(r: redis.Redis) -> list[str]:
    """All model names, sorted."""
    return sorted(_text(m) for m in r.smembers(keys.models_key()))


def put_model(
    r: redis.Redis, name: str, config: ModelConfig, limits: ModelLimits | None = None
) -> ModelConfig:
    """Create model ``name`` or reconfigure it; returns the stored configuration.

    Raises ``ValueError`` with a message for an invalid name, an unknown learner
    or invalid hyperparameters, and :class:`ModelTooLarge` for a model over
    ``limits`` (default :class:`ModelLimits`). Putting an unchanged
    configuration is a no-op.
    """
    existing = get_model(r, name)
    stored = _prepared(name, config, existing, limits or ModelLimits(), _clock_us(r.time()))
    if stored is existing:
        return stored
    with r.pipeline(transaction=True) as p:  # the model's keys: one cluster slot
        if existing is not None:
            p.delete(*_reset_keys(name))
        p.delete(keys.config_key(name))
        p.hset(keys.config_key(name), mapping=_to_hash(stored))  # type: ignore[arg-type]
        p.execute()
    r.sadd(keys.models_key(), name)  # the registry (another slot), once the config exists
    return stored


def delete_model(r: redis.Redis, name: str) -> bool:
    """Remove model ``name`` and all its keys; False when it did not exist."""
    removed = r.srem(keys.models_key(), name)  # out of the registry first: no worker loads it
    r.delete(*_all_keys(name))  # one model's keys: one cluster slot
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
        ModelLimits.from_settings(settings),
    )


# ---------------------------------------------------------------- asyncio client
async def get_model_async(r: aredis.Redis, name: str) -> ModelConfig | None:
    """:func:`get_model` for an asyncio client."""
    return _from_hash(await r.hgetall(keys.config_key(name)))


async def list_models_async(r: aredis.Redis) -> list[str]:
    """:func:`list_models` for an asyncio client."""
    return sorted(_text(m) for m in await r.smembers(keys.models_key()))


async def put_model_async(
    r: aredis.Redis, name: str, config: ModelConfig, limits: ModelLimits | None = None
) -> ModelConfig:
    """:func:`put_model` for an asyncio client."""
    existing = await get_model_async(r, name)
    clock = _clock_us(await r.time())
    stored = _prepared(name, config, existing, limits or ModelLimits(), clock)
    if stored is existing:
        return stored
    async with r.pipeline(transaction=True) as p:  # the model's keys: one cluster slot
        if existing is not None:
            p.delete(*_reset_keys(name))
        p.delete(keys.config_key(name))
        p.hset(keys.config_key(name), mapping=_to_hash(stored))  # type: ignore[arg-type]
        await p.execute()
    await r.sadd(keys.models_key(), name)  # the registry (another slot), once the config exists
    return stored


async def delete_model_async(r: aredis.Redis, name: str) -> bool:
    """:func:`delete_model` for an asyncio client."""
    removed = await r.srem(keys.models_key(), name)  # out of the registry first
    await r.delete(*_all_keys(name))  # one model's keys: one cluster slot
    return bool(removed)
