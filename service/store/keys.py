"""Redis key names. The ``{m}`` hash tag keeps all of a model's keys on one cluster slot."""

from __future__ import annotations

__all__ = [
    "alerts_key",
    "answers_key",
    "audit_key",
    "auth_rate_key",
    "auth_keys_key",
    "auth_names_key",
    "auth_revoked_key",
    "auth_version_key",
    "config_key",
    "cuts_key",
    "dead_key",
    "failed_key",
    "heartbeat_key",
    "history_key",
    "labels_key",
    "lease_key",
    "log_key",
    "models_key",
    "progress_key",
    "quarantine_key",
    "queries_key",
    "snapshot_history_key",
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


def answers_key(m: str) -> str:
    """Stream (capped): the event ids ``POST /label`` accepted a label for, so that every
    open annotator page drops a request as soon as anyone answers it
    (docs/architecture.md, "Answered requests")."""
    return f"omtl:{{{m}}}:answers"


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


def quarantine_key(m: str) -> str:
    """Hash: id of a log entry the learner failed on -> the error. The entry is left out
    of the model's state (dead-lettered) by every replay
    (docs/architecture.md, "When the learner fails")."""
    return f"omtl:{{{m}}}:quarantine"


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


def snapshot_history_key(m: str) -> str:
    """Hash: the snapshots before the latest one, ``<version>:header`` and
    ``<version>:arrays``, the newest ``OMTL_SNAPSHOT_KEEP - 1`` of them (rollback)."""
    return f"omtl:{{{m}}}:snapshots"


def history_key(m: str) -> str:
    """Stream: periodic counter totals of the model, for the dashboard's curves
    (docs/architecture.md, "The history stream")."""
    return f"omtl:{{{m}}}:history"


# --- API keys and the audit trail: service-wide, outside every model's hash tag ---


def auth_keys_key() -> str:
    """Hash: key id -> JSON record of an API key (name, role, models, sha256 of the key)."""
    return "omtl:auth:keys"


def auth_names_key() -> str:
    """Hash: key name -> key id (names are unique; the audit trail records them)."""
    return "omtl:auth:names"


def auth_revoked_key() -> str:
    """Set: ids of revoked keys (a bootstrap key is never registered again once revoked)."""
    return "omtl:auth:revoked"


def auth_version_key() -> str:
    """String: a counter bumped by every revocation; API processes poll it to drop cached keys."""
    return "omtl:auth:version"


def audit_key() -> str:
    """Stream: who created, reconfigured or deleted a model, and who created or revoked a key."""
    return "omtl:audit"


def auth_rate_key(route: str, key_id: str) -> str:
    """Hash: the token bucket (``tokens``, ``ts``) of one key for one route, shared by the
    API processes when ``OMTL_RATE_LIMIT_SCOPE=redis``; expires once full again."""
    return f"omtl:auth:rate:{route}:{key_id}"


# ---------------------------------------------------------------- worker membership
def workers_key() -> str:
    """Sorted set: live worker ids scored by the server time (ms) of their last heartbeat.

    A global key (no hash tag), touched only by single-key commands and scripts,
    so it lives on one cluster slot like any other key."""
    return "omtl:workers"
