"""Redis key names. The ``{m}`` hash tag keeps all of a model's keys on one cluster slot."""

from __future__ import annotations

__all__ = [
    "alerts_key",
    "config_key",
    "cuts_key",
    "dead_key",
    "failed_key",
    "heartbeat_key",
    "labels_key",
    "lease_key",
    "log_key",
    "models_key",
    "progress_key",
    "queries_key",
    "snapshot_key",
    "workers_key",
]


def models_key() -> str:
    """Set of all model names."""
    return "omtl:models"


def config_key(m: str) -> str:
    """Hash: the model's learner, params, n_features, kind, tasks, created, generation."""
    return f"omtl:{{{m}}}:config"


def log_key(m: str) -> str:
    """Stream: the model's one ordered log of events, batches and labels."""
    return f"omtl:{{{m}}}:log"


def queries_key(m: str) -> str:
    """Stream: label requests for annotators."""
    return f"omtl:{{{m}}}:queries"


def snapshot_key(m: str) -> str:
    """Hash: version, header (JSON) and arrays (npz) of the latest snapshot."""
    return f"omtl:{{{m}}}:snapshot"


def labels_key(m: str) -> str:
    """Hash: event id -> label accepted by the API (for its 202 / 409 answers)."""
    return f"omtl:{{{m}}}:labels"


def cuts_key(m: str) -> str:
    """Set: ids of log entries that start a new group of labelled events because the
    entries of the same millisecond before them were applied when a read ended."""
    return f"omtl:{{{m}}}:cuts"


def dead_key(m: str) -> str:
    """Stream: entries that could not be applied, with the reason."""
    return f"omtl:{{{m}}}:dead"


def alerts_key(m: str) -> str:
    """Stream: outlier / inlier task alerts."""
    return f"omtl:{{{m}}}:alerts"


def failed_key(m: str) -> str:
    """Hash: why the worker cannot load the model (``reason``, ``since``, ``worker``);
    absent while the model loads."""
    return f"omtl:{{{m}}}:failed"


def lease_key(m: str) -> str:
    """String: id of the worker owning the model, with a TTL."""
    return f"omtl:{{{m}}}:lease"


def heartbeat_key(m: str) -> str:
    """String: epoch seconds of the owning worker's last loop, with a TTL."""
    return f"omtl:{{{m}}}:heartbeat"


def progress_key(m: str) -> str:
    """Hash: ``applied`` (log entries the worker applied that are still in the log) and the
    ``generation`` it counts for; the log's backlog is its length minus ``applied``."""
    return f"omtl:{{{m}}}:progress"


# ---------------------------------------------------------------- worker membership
def workers_key() -> str:
    """Sorted set: live worker ids scored by the server time (ms) of their last heartbeat.

    A global key (no hash tag), touched only by single-key commands and scripts,
    so it lives on one cluster slot like any other key."""
    return "omtl:workers"
