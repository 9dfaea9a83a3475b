"""Request and response bodies of the HTTP API (pydantic models).

The hot endpoints (``/predict``, ``/label``, ``/events``) read their raw body
with orjson and validate it with these models in Python mode, so the OpenAPI
schema at ``/docs`` is exactly what the server checks, without FastAPI's slower
generic body path. Floats must be finite (``allow_inf_nan=False``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

__all__ = [
    "EventIn",
    "EventsAccepted",
    "EventsRequest",
    "LabelAccepted",
    "LabelRequest",
    "LabelRequestCounts",
    "ModelInfo",
    "ModelPut",
    "PredictBatchRequest",
    "PredictBatchResponse",
    "PredictRequest",
    "PredictResponse",
    "RelationsResponse",
    "RollbackRequest",
    "ServiceInfo",
    "SnapshotVersions",
    "SparseX",
    "TaskStats",
]

MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
TASK_NAME_PATTERN = r"^[^\x00-\x1f]{1,200}$"
#: One number of a Redis stream id: decimal without leading zeros (Redis reads "01" as 1,
#: so a second spelling would name the same entry and pass a check keyed by the text).
_ID_NUMBER = r"(0|[1-9][0-9]{0,19})"
#: A log entry id ``<ms>-<seq>`` (its numbers also fit 64 bits: :func:`fits_stream_id`).
ENTRY_ID_PATTERN = rf"{_ID_NUMBER}-{_ID_NUMBER}"
EVENT_ID_PATTERN = rf"^{ENTRY_ID_PATTERN}(/(0|[1-9][0-9]{{0,8}}))?$"
_U64_MAX = 2**64 - 1


def fits_stream_id(value: str | None) -> str | None:
    """``value`` when every number in it fits a Redis stream id's 64 bits, else
    ``ValueError`` (a 422: Redis would refuse the id as an argument)."""
    if value is not None and any(int(n) > _U64_MAX for n in re.findall(r"[0-9]+", value)):
        raise ValueError(f"{value!r} is not a stream id: its numbers must be at most {_U64_MAX}")
    return value


#: A stream id's text checked by :func:`fits_stream_id`.
WithinStreamIds = AfterValidator(fits_stream_id)

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


class SparseX(BaseModel):
    """A sparse feature vector: parallel lists of indices and values."""

    model_config = _STRICT
    indices: list[int] = Field(description="Feature indices in [0, n_features).")
    values: list[float] = Field(description="The values at those indices (finite).")


Features = list[float] | SparseX
TaskName = str

_MODEL = Field(
    default=None,
    pattern=MODEL_NAME_PATTERN,
    description="Model name; the service's default model when omitted.",
)
_TASK = Field(
    pattern=TASK_NAME_PATTERN,
    description="Task id (any string); an unseen task is created when the worker applies it.",
)
_REF = Field(
    default=None,
    max_length=512,
    description="Opaque reference passed through to annotators (e.g. a row id in your data).",
)


# ---------------------------------------------------------------- multiview rounds
#: The instances of a multiview round, by task name (docs/architecture.md, "Multiview rounds").
Views = dict[Annotated[str, StringConstraints(pattern=TASK_NAME_PATTERN)], Features]
_X_OR_VIEWS = Field(
    default=None,
    description="Features: a dense list of n_features numbers, or {indices, values}. "
    "Give x for a single-instance learner, views for a multiview one.",
)
_VIEWS = Field(
    default=None,
    min_length=1,
    description="A multiview round (learners mmperc, matrix-pnorm, multiview-*): the "
    "instance of each task, {task: x}, x dense (that task's dimension d_j) or "
    "{indices, values}. `task` names the task the round is scored and labelled for and "
    "must be one of the views; a task of the model left out is the zero vector.",
)


class _XOrViews(BaseModel):
    """An event's instance: ``x`` (single-instance learners) or ``views`` (multiview)."""

    model_config = _STRICT
    x: Features | None = _X_OR_VIEWS
    views: Views | None = _VIEWS

    @model_validator(mode="after")
    def _one_of(self) -> _XOrViews:
        if (self.x is None) == (self.views is None):
            raise ValueError(
                "give exactly one of x (a single event) and views (a multiview round, "
                "{task: x, ...})"
            )
        return self


class PredictItem(_XOrViews):
    """One item of a batch prediction."""

    model_config = _STRICT
    task: TaskName = _TASK
    ref: str | None = _REF


class PredictRequest(PredictItem):
    """Predict one event (and append it to the model's log unless ``learn`` is false)."""

    model: str | None = _MODEL
    learn: bool = Field(
        default=True, description="Append the event to the log so it can be labelled and learned."
    )


class PredictBatchRequest(BaseModel):
    """Predict many events in one request (the batch form of ``POST /predict``)."""

    model_config = _STRICT
    model: str | None = _MODEL
    learn: bool = Field(default=True, description="Append the events to the log.")
    items: list[PredictItem] = Field(min_length=1, description="The events, in order.")


class PredictResponse(BaseModel):
    """A prediction; ``event_id`` is what ``POST /label`` refers to (null when learn=false)."""

    event_id: str | None
    label: float = Field(
        description="+1/-1 for classification models, the real value for regression."
    )
    score: float = Field(description="The signed score (margin) the label comes from.")
    model_version: int = Field(description="Version of the snapshot that answered (0: none yet).")
    task: str


class PredictBatchResponse(BaseModel):
    """The answers of a batch prediction, in the order of the items."""

    model_version: int
    items: list[PredictResponse]


class LabelRequest(BaseModel):
    """The label of an event appended earlier (by /predict, /events or a producer)."""

    model_config = _STRICT
    model: str | None = _MODEL
    event_id: Annotated[
        str,
        Field(pattern=EVENT_ID_PATTERN, description="Event id, e.g. 1700000000000-0 or E/3."),
        WithinStreamIds,
    ]
    y: float = Field(
        description="-1 or +1 for classification models; any finite real for regression "
        "(up to the learner's bound where it has one: 1e50 in magnitude for ELLA)."
    )
    annotator: str | None = Field(default=None, max_length=200, description="Who labelled it.")


class LabelAccepted(BaseModel):
    """Answer of ``POST /label`` (202): ``accepted`` the first time, ``duplicate`` on a retry."""

    status: Literal["accepted", "duplicate"]
    event_id: str
    y: float


class EventIn(_XOrViews):
    """One event sent by a producer: labelled when ``y`` is given."""

    model_config = _STRICT
    task: TaskName = _TASK
    y: float | None = Field(default=None, description="The label, if known.")
    ref: str | None = _REF


class EventsRequest(BaseModel):
    """A batch of events for one model."""

    model_config = _STRICT
    model: str | None = _MODEL
    events: list[EventIn] = Field(min_length=1, description="The events, in log order.")


class EventsAccepted(BaseModel):
    """The ids the events got in the log (``E/i`` for rows of one batch entry)."""

    count: int
    event_ids: list[str]


class ModelPut(BaseModel):
    """Create or reconfigure a model (a new configuration starts the model afresh)."""

    model_config = ConfigDict(extra="forbid")
    learner: str = Field(description="Registry name, see GET / or `omtl learners`.")
    params: dict[str, Any] = Field(default_factory=dict, description="Learner hyperparameters.")
    n_features: int = Field(ge=1, le=10_000_000, description="Feature dimension d.")
    tasks: list[Annotated[str, StringConstraints(pattern=TASK_NAME_PATTERN)]] = Field(
        default_factory=list,
        description="Initial task names (optional; each a name an event can give: 1-200 "
        "characters, no control characters).",
    )
    seed: int = Field(default=0, ge=0, description="Seed of the learner's random generator.")


class LabelRequestCounts(BaseModel):
    """Label requests of a model as of its snapshot: ``issued = answered + pending`` plus the
    requests that expired (their event left the log, or more than 100,000 were pending)."""

    issued: int = Field(description="Label requests the worker emitted.")
    answered: int = Field(description="Requested events whose label was applied.")
    pending: int = Field(description="Requested events not labelled yet.")


class ModelInfo(BaseModel):
    """A model's configuration and progress."""

    name: str
    learner: str
    params: dict[str, Any]
    n_features: int
    seed: int
    kind: str
    tasks: list[str] = Field(description="Task names the model has seen, in index order.")
    generation: int = Field(
        description="Incarnation id: new for every creation of the name, bumped by every "
        "reconfiguration (PUT)."
    )
    created: float = Field(description="Time of the current configuration (epoch seconds).")
    version: int = Field(description="Latest snapshot version (0: none yet).")
    snapshot_age_seconds: float | None
    last_applied_id: str = Field(description="Last log entry the snapshot includes.")
    counts: dict[str, int] = Field(
        description="Totals over tasks (events, labels, mistakes, queries, predictions) "
        "stream lengths (log_entries, dead_letters) and label_requests_pending (issued and "
        "not labelled yet, as in label_requests)."
    )
    label_requests: LabelRequestCounts | None = Field(
        default=None, description="Label requests issued / answered / pending (null: failed)."
    )
    status: Literal["ok", "failed"] = Field(
        default="ok",
        description="'failed' while the model's configuration or snapshot cannot be loaded "
        "(the worker retries it every OMTL_MODEL_RETRY_S seconds); the other fields then "
        "show what could be read.",
    )
    failure: str | None = Field(default=None, description="Why the model is failed.")
    task_dims: dict[str, int] | None = Field(
        default=None,
        description="Multiview learners: the dimension d_j of every named task's view "
        "(params.task_dims at PUT, else n_features); null for single-instance learners.",
    )


class TaskStats(BaseModel):
    """Online statistics of one task."""

    task: str
    events: int
    labels: int = Field(description="Labels learned: labelled events and posted labels.")
    mistakes: int = Field(
        description="Online mistakes: the prediction just before each label was learned was wrong."
    )
    label_requests: int
    predictions: int
    online_accuracy: float | None = Field(
        description="1 - mistakes / labels; null before any label and for regression models. "
        "The worker scores every label "
        "before learning it (progressive validation): an event that arrives with its label is "
        "scored on arrival, a label posted later through /label is scored when it is applied."
    )
    rmse: float | None = Field(
        default=None,
        description="Regression models: root mean squared online error (prediction just before "
        "each label was learned); null for classification and before any label.",
    )
    mae: float | None = Field(
        default=None, description="Regression models: mean absolute online error (as rmse)."
    )
    outlier_score: float | None = None
    outlier: bool | None = None


class RelationsResponse(BaseModel):
    """The learner's task relation matrix, rows and columns named by task, with what it is."""

    model: str
    version: int
    kind: str = Field(
        description="What the matrix is: none, fixed-interaction, learned-interaction, "
        "committee-weights, task-covariance, code-similarity or weight-similarity."
    )
    meaning: str = Field(description="What the entries mean, in one sentence.")
    tasks: list[str] = Field(description="Names of the rows and columns (the subset if given).")
    total_tasks: int = Field(description="Number of tasks of the model.")
    matrix: list[list[float]] | None = Field(
        description="The matrix over `tasks`; null when the learner has none or matrix=false."
    )
    top: dict[str, list[tuple[str, float]]] | None = Field(
        default=None,
        description="With top_k: per task, the top_k most related other tasks and their values, "
        "best first (by magnitude for interaction matrices, by value otherwise).",
    )


class RollbackRequest(BaseModel):
    """Which kept snapshot ``POST /models/{m}/rollback`` restores."""

    model_config = ConfigDict(extra="forbid")
    version: int = Field(ge=1, description="A version from GET /models/{m}/snapshots.")


class SnapshotVersions(BaseModel):
    """Snapshot versions a rollback can restore."""

    model: str
    versions: list[int] = Field(description="Newest first: the latest and the kept ones.")


class ServiceInfo(BaseModel):
    """What ``GET /`` reports."""

    name: str
    version: str
    docs: str
    metrics: str
    models: list[str]
    default_model: str | None
    learners: list[str]
