"""Prometheus metrics of the service (module-level objects in the default registry).

The worker does not touch these on every event: it keeps plain counters and
publishes their increments once per read of the log (see
:mod:`service.worker.stats`). Task labels are capped by :func:`task_label` so a
stream with many task names cannot blow up the number of series.
"""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

__all__ = [
    "DEAD_LETTERS",
    "EVENTS",
    "HTTP_REQUESTS",
    "LABELS",
    "LABEL_REQUESTS",
    "LEARNER_ERRORS",
    "LEASE_OWNER",
    "LOG_LAG",
    "MODEL_FAILED",
    "MODEL_HEALTHY",
    "ONLINE_MISTAKES",
    "OTHER_TASK",
    "OUTLIER_TASK",
    "PREDICT_LATENCY",
    "PREDICT_REQUESTS",
    "SNAPSHOT_AGE",
    "SNAPSHOT_VERSION",
    "UPDATE_LATENCY",
    "WORKER_ENTRIES",
    "forget_model",
    "model_series",
    "task_label",
]

OTHER_TASK = "other"

_LATENCY_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
)

EVENTS = Counter("omtl_events_total", "Events applied by the worker.", ["model", "task"])
LABELS = Counter(
    "omtl_labels_total", "Labels learned (labelled events and label entries).", ["model", "task"]
)
LABEL_REQUESTS = Counter(
    "omtl_label_requests_total", "Label requests emitted to annotators.", ["model", "task"]
)
ONLINE_MISTAKES = Counter(
    "omtl_online_mistakes_total",
    "Online (predict-then-learn) mistakes on labelled events.",
    ["model", "task"],
)
PREDICT_REQUESTS = Counter("omtl_predict_requests_total", "Predictions served.", ["model"])
PREDICT_LATENCY = Histogram(
    "omtl_predict_latency_seconds",
    "Latency of serving a prediction.",
    ["model"],
    buckets=_LATENCY_BUCKETS,
)
UPDATE_LATENCY = Histogram(
    "omtl_update_latency_seconds",
    "Worker time to apply one read of log entries.",
    ["model"],
    buckets=_LATENCY_BUCKETS,
)
LOG_LAG = Gauge("omtl_log_lag_entries", "Log entries not yet applied by the worker.", ["model"])
SNAPSHOT_AGE = Gauge("omtl_snapshot_age_seconds", "Age of the latest snapshot.", ["model"])
SNAPSHOT_VERSION = Gauge("omtl_snapshot_version", "Version of the latest snapshot.", ["model"])
DEAD_LETTERS = Counter(
    "omtl_dead_letters_total", "Log entries moved to the dead-letter stream.", ["model"]
)
LEARNER_ERRORS = Counter(
    "omtl_learner_errors_total",
    "Times the learner failed on log entries (an error other than a refusal of the input): "
    "the model was rolled back to its snapshot, the entry quarantined and dead-lettered.",
    ["model"],
)
LEASE_OWNER = Gauge(
    "omtl_lease_owner", "1 while this worker holds the model's lease, else 0.", ["model", "worker"]
)
OUTLIER_TASK = Gauge(
    "omtl_outlier_task", "1 while the learner flags the task as an outlier.", ["model", "task"]
)
HTTP_REQUESTS = Counter(
    "omtl_http_requests_total", "HTTP requests served.", ["method", "route", "status"]
)
WORKER_ENTRIES = Counter(
    "omtl_worker_entries_total", "Log entries applied by the worker (any kind).", ["model"]
)

MODEL_FAILED = Gauge(
    "omtl_model_failed",
    "1 while the worker cannot load the model (its state or configuration is invalid) "
    "or serving it failed (the reason is in GET /models/{m} and the log), retried every 30 s.",
    ["model"],
)
REDIS_WRITE_DURABILITY = Gauge(
    "omtl_redis_write_durability",
    "At the last /health/ready: 1 when the Redis server fsyncs every acknowledged write "
    "(appendonly yes, appendfsync always), 0 when a crash of the server can lose some, "
    "-1 when the server does not say (CONFIG not allowed).",
)
MODEL_HEALTHY = Gauge(
    "omtl_model_healthy",
    "API view of each model at the last /health/models: 1 when a worker heartbeat is fresh "
    "and the model is not failed, else 0.",
    ["model"],
)

#: Every metric with a ``model`` label: the series of a deleted model are removed from these.
_PER_MODEL: tuple[MetricWrapperBase, ...] = (
    EVENTS,
    LABELS,
    LABEL_REQUESTS,
    ONLINE_MISTAKES,
    PREDICT_REQUESTS,
    PREDICT_LATENCY,
    UPDATE_LATENCY,
    LOG_LAG,
    SNAPSHOT_AGE,
    SNAPSHOT_VERSION,
    DEAD_LETTERS,
    LEARNER_ERRORS,
    LEASE_OWNER,
    OUTLIER_TASK,
    WORKER_ENTRIES,
    MODEL_FAILED,
    MODEL_HEALTHY,
)


def _label_sets(metric: MetricWrapperBase, model: str) -> list[Sequence[str]]:
    position = metric._labelnames.index("model")
    with metric._lock:
        return [labels for labels in metric._metrics if labels[position] == model]


def model_series(model: str) -> int:
    """How many labelled children (series families) the metrics hold for ``model``."""
    return sum(len(_label_sets(metric, model)) for metric in _PER_MODEL)


def forget_model(model: str) -> int:
    """Remove every series of ``model`` (a deleted model's lag or lease gauges would
    otherwise be exported, and alerts fire, forever); returns how many were removed."""
    removed = 0
    for metric in _PER_MODEL:
        for labels in _label_sets(metric, model):
            metric.remove(*labels)
            removed += 1
    return removed


def task_label(name: str, seen: set[str], cap: int = 50) -> str:
    """The metric label of task ``name``: itself for the first ``cap`` names, else "other".

    ``seen`` is the caller's set of names already given their own label; it is
    updated in place.
    """
    if name in seen:
        return name
    if len(seen) < cap:
        seen.add(name)
        return name
    return OTHER_TASK
