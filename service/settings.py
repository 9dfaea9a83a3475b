"""Service settings, read from the environment (prefix ``OMTL_``, plus a plain ``REDIS_URL``).

Every process of the service (``omtl up``, ``omtl api``, ``omtl worker``) reads
the same :class:`Settings`. Tests build ``Settings(...)`` directly; the
processes call the cached :func:`get_settings`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings", "get_settings"]


class Settings(BaseSettings):
    """Configuration of the API, the worker and the embedded server."""

    model_config = SettingsConfigDict(
        env_prefix="OMTL_", populate_by_name=True, extra="ignore", validate_default=True
    )

    redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("REDIS_URL", "OMTL_REDIS_URL", "redis_url"),
        description="Redis URL; unset means `omtl up` starts an embedded server.",
    )
    data_dir: Path = Field(
        default=Path("omtl-data"), description="Data directory of the embedded server."
    )
    redis_appendfsync: Literal["always", "everysec"] = Field(
        default="always",
        description=(
            "fsync policy of the embedded server's append-only file: 'always' (every "
            "acknowledged write survives a kill -9 or power loss of the server) or "
            "'everysec' (faster; up to about one second of acknowledged writes can be lost)."
        ),
    )
    default_model: str = Field(default="default", description="Model created at start-up.")
    default_learner: str = Field(
        default="adaptive-auto",
        description="Learner of the default model (adaptive-auto: no tuning needed, "
        "docs/algorithms.md Sec. 11.8).",
    )
    default_n_features: int = Field(default=10, ge=1, description="d of the default model.")
    default_params: dict[str, Any] = Field(
        default_factory=dict, description="Hyperparameters of the default model (JSON)."
    )
    default_tasks: list[str] = Field(
        default_factory=list, description="Initial task names of the default model (JSON)."
    )
    snapshot_every_entries: int = Field(
        default=10_000, ge=1, description="Snapshot after this many applied log entries."
    )
    snapshot_every_seconds: float = Field(
        default=1.0, gt=0, description="Snapshot at least this often while entries arrive."
    )
    stream_maxlen: int = Field(
        default=1_000_000,
        ge=1,
        description="Applied log entries kept (for labels) when the worker trims after a snapshot.",
    )
    queries_maxlen: int = Field(
        default=100_000, ge=1, description="Approximate MAXLEN of the label-request stream."
    )
    api_host: str = Field(default="127.0.0.1", description="Bind address of the API.")
    api_port: int = Field(default=8000, ge=0, le=65535, description="Port of the API.")
    worker_metrics_port: int = Field(
        default=9101, ge=0, le=65535, description="Prometheus port of a stand-alone worker."
    )
    log_level: str = Field(default="info", description="Logging level.")
    max_body_bytes: int = Field(default=1_048_576, ge=1, description="Largest accepted body.")
    otel: bool = Field(
        default=False,
        description="FastAPI's native OpenTelemetry spans, metrics and logs for every request.",
    )
    max_batch_items: int = Field(default=10_000, ge=1, description="Most items in one request.")
    lease_ttl_ms: int = Field(default=5000, ge=100, description="Lifetime of a worker's lease.")
    lease_stall_s: float = Field(
        default=0.0,
        ge=0,
        description="A worker whose loop made no progress this long stops renewing its leases "
        "(0: never; a step may take as long as it takes).",
    )
    heartbeat_ttl_s: int = Field(default=10, ge=1, description="Lifetime of a heartbeat.")
    read_count: int = Field(default=500, ge=1, description="Log entries per XREAD.")
    block_ms: int = Field(default=1000, ge=0, description="XREAD BLOCK timeout.")
    redis_timeout_s: float = Field(
        default=5.0,
        gt=0,
        description="The API's hot-path Redis connection gives up connecting, or waiting for "
        "a reply, after this many seconds (the request gets a 503; the next one reconnects).",
    )
    max_model_bytes: int = Field(
        default=256 * 1024**2,
        ge=1,
        description="Memory budget of one model: the most bytes of learner state (estimated "
        "from its shape: K x d weights, K x K matrices, buffers) a model may have.",
    )
    max_tasks: int = Field(default=1000, ge=1, description="Most tasks one model may have.")
    model_retry_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds before a worker tries again to load a failed model (one whose "
        "configuration or snapshot cannot be loaded).",
    )
    queries_keepalive_s: float = Field(
        default=15.0,
        gt=0,
        description="An idle label-request stream (GET /queries) sends a comment this often.",
    )
    queries_block_s: float = Field(
        default=20.0,
        gt=0,
        description="Longest blocking read of the API's one label-request reader per model.",
    )
    max_backlog: int = Field(
        default=100_000,
        ge=1,
        description="Log entries not yet applied by the worker above which appends get 429.",
    )
    max_step_seconds: float = Field(
        default=1.0,
        gt=0,
        description="The worker stops applying a read after this long and goes on next step.",
    )
    task_label_cap: int = Field(
        default=50, ge=1, description="Task names beyond this share the metric label 'other'."
    )

    # -- snapshot history and rollback (docs/architecture.md, "Export, import and rollback")
    snapshot_keep: int = Field(
        default=3,
        ge=1,
        description="Snapshots kept per model for POST /models/{m}/rollback: the latest and "
        "up to N-1 earlier ones (1: no history).",
    )
    snapshot_keep_every_s: float = Field(
        default=60.0,
        ge=0,
        description="An earlier snapshot goes to the history at most once per this many "
        "seconds (snapshots come every second under load; 0: every one).",
    )
    # --- dashboard history (docs/architecture.md, "The history stream") ---
    history_interval_s: float = Field(
        default=5.0,
        ge=0,
        description="The worker appends a model's counter totals to its history stream at "
        "most this often (and when it publishes a snapshot); 0: at every snapshot.",
    )
    history_maxlen: int = Field(
        default=2000, ge=10, description="Approximate length bound of each history stream."
    )
    # --- authentication and roles (docs/architecture.md, "Authentication and roles") ---
    auth: Literal["required", "off"] | None = Field(
        default=None,
        description="API keys: 'required' or 'off'. Unset: off on a loopback bind address; "
        "the API refuses to start on any other address until this is set explicitly.",
    )
    bootstrap_admin_key_file: Path | None = Field(
        default=None,
        description="File holding an admin key (from `omtl keys token`) registered at start-up "
        "as the key 'bootstrap-admin' (a Kubernetes or compose secret).",
    )
    label_rate_per_key: float = Field(
        default=0.0, ge=0, description="POST /label requests per second per key (0: no limit)."
    )
    events_rate_per_key: float = Field(
        default=0.0, ge=0, description="POST /events requests per second per key (0: no limit)."
    )
    rate_burst: int = Field(
        default=20, ge=1, description="Requests a key may send at once above its rate."
    )
    rate_limit_scope: Literal["process", "redis"] = Field(
        default="process",
        description="Where the per-key buckets live: in each API process (no round trip; N "
        "replicas allow N times the rate) or in Redis (one limit for all replicas).",
    )
    auth_cache_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds a verified key stays cached in an API process (a revocation "
        "reaches every process within OMTL_AUTH_REVOCATION_CHECK_S regardless).",
    )
    auth_revocation_check_s: float = Field(
        default=1.0, gt=0, description="How often an API process reads the revocation counter."
    )
    metrics_public: bool = Field(
        default=True, description="GET /metrics of the API without a key (false: any key)."
    )
    metrics_port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="If set, the API also serves its Prometheus metrics, without a key, on this "
        "port of OMTL_METRICS_HOST (e.g. a private interface).",
    )
    metrics_host: str = Field(default="127.0.0.1", description="Bind address of OMTL_METRICS_PORT.")

    @field_validator("log_level")
    @classmethod
    def _check_level(cls, v: str) -> str:
        level = v.lower()
        if level not in ("critical", "error", "warning", "info", "debug"):
            raise ValueError(f"unknown log level {v!r}")
        return level

    @field_validator("redis_url")
    @classmethod
    def _empty_url_is_none(cls, v: str | None) -> str | None:
        return v or None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
