"""Model snapshots: the learner's ``state_dict``, task names, the last applied log id and counters.

A snapshot lives in the hash ``omtl:{m}:snapshot`` with three fields written in
one atomic step:

* ``version``: an integer, +1 per snapshot;
* ``header``: JSON with ``format`` (1), ``model``, ``generation``, ``learner``,
  ``last_id``, ``created`` (epoch seconds), ``task_names``, ``counters``
  (scalar totals of the worker) and ``scalars`` (the non-array values of the
  learner's ``state_dict``);
* ``arrays``: an ``.npz`` archive with the array values of the ``state_dict``
  (``learner.<key>``), the per-task counters (``counter.<name>``, length K) and
  the ids of the events labelled by label entries (``worker.labelled``, rows of
  ``(ms, seq, row)``, row -1 for a single-event entry), the ids of the events
  whose label was requested and not given yet (``worker.requested``, same rows)
  and, for regression, the per-task sums of squared and absolute online errors
  (``error.<name>``, float64, length K).

Nothing is pickled: the archive's members are read with
``np.lib.format.read_array(allow_pickle=False)``, so whoever can write to
Redis cannot make a reader run code. Nor can they make it allocate without
bound or crash: :func:`decode` checks the header's fields and types, the
learner, dimension and task count against the model's configuration
(:class:`Expected`), each member's dtype and declared size (from its ``.npy``
header, before its data is inflated) against the model's memory budget, and
rebuilds and probes the learner; any problem is a :class:`SnapshotInvalid`
with the reason, which the worker reports by marking the model failed
(docs/architecture.md, "Leases and fencing", Failures).
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import re
import time
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import redis
import redis.asyncio as aredis

import learners
from learners import Learner
from service.store.keys import config_key, lease_key, snapshot_history_key, snapshot_key
from service.store.scripts import WRITE_SNAPSHOT

__all__ = [
    "COUNTER_NAMES",
    "ERROR_NAMES",
    "FORMAT",
    "Expected",
    "Snapshot",
    "SnapshotFenced",
    "SnapshotInvalid",
    "decode",
    "encode",
    "npz_bytes",
    "read_snapshot",
    "read_snapshot_async",
    "read_version",
    "read_version_async",
    "write_snapshot",
]

FORMAT = 1
#: Per-task counters, each an int64 array of length K.
COUNTER_NAMES = ("events", "labels", "mistakes", "queries", "predictions")

#: Per-task sums of online errors of regression models, each a float64 array of length K:
#: squared and absolute differences of the prediction made just before a label was learned.
ERROR_NAMES = ("sq_error", "abs_error")

_LEARNER = "learner."
_COUNTER = "counter."
_ERROR = "error."
_LABELLED = "worker.labelled"
_REQUESTED = "worker.requested"


class SnapshotFenced(RuntimeError):
    """The writer no longer owns the model (lease lost or model reconfigured)."""


class SnapshotInvalid(ValueError):
    """A stored snapshot that cannot be this model's state (malformed, foreign or too large)."""


#: Most bytes of the archive members that are not the learner's state (counters, labelled ids).
MAX_BOOKKEEPING_BYTES = 256 * 1024**2


@dataclass(frozen=True, slots=True)
class Expected:
    """What a model's snapshot must agree with: its configuration and limits.

    ``learner`` and ``n_features`` come from the configuration (None: not
    checked); ``max_tasks`` and ``max_bytes`` are the model's limits
    (:class:`service.store.models.ModelLimits`).
    """

    learner: str | None = None
    n_features: int | None = None
    max_tasks: int = 1000
    max_bytes: int = 256 * 1024**2


def _empty_labelled() -> np.ndarray:
    return np.zeros((0, 3), dtype=np.int64)


def _padded(values: np.ndarray | None, k: int, dtype: type[np.generic]) -> np.ndarray:
    """``values`` as a ``dtype`` array of length at least ``k`` (zeros appended)."""
    arr = np.asarray(values if values is not None else np.zeros(0), dtype=dtype)
    if arr.shape[0] < k:
        arr = np.concatenate([arr, np.zeros(k - arr.shape[0], dtype=dtype)])
    return arr


@dataclass
class Snapshot:
    """One model's state at a position of its log.

    ``last_id`` is the id of the last applied log entry (``"0-0"`` before any).
    ``counters`` maps each of :data:`COUNTER_NAMES` to an int64 array of length
    ``learner.n_tasks``; ``totals`` holds the worker's scalar counters;
    ``labelled`` the ``(ms, seq, row)`` ids of events labelled by label entries;
    ``requested`` those of events with a label request not answered yet, in log
    order; ``errors`` maps each of :data:`ERROR_NAMES` to a float64 array of
    length K (zeros for classification models).
    """

    version: int
    generation: int
    learner: Learner
    task_names: list[str]
    last_id: str = "0-0"
    created: float = field(default_factory=time.time)
    counters: dict[str, np.ndarray] = field(default_factory=dict)
    model: str = ""
    totals: dict[str, int] = field(default_factory=dict)
    labelled: np.ndarray = field(default_factory=_empty_labelled)
    requested: np.ndarray = field(default_factory=_empty_labelled)
    errors: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        k = self.learner.n_tasks
        for name in COUNTER_NAMES:
            self.counters[name] = _padded(self.counters.get(name), k, np.int64)
        for name in ERROR_NAMES:
            self.errors[name] = _padded(self.errors.get(name), k, np.float64)

    def task_index(self, name: str) -> int | None:
        """Index of the task called ``name``, or None for a task not seen yet."""
        try:
            return self.task_names.index(name)
        except ValueError:
            return None

    def learner_for_task(self, name: str) -> tuple[Learner, int]:
        """A learner and task index that score ``x`` for the task ``name``.

        A known task uses the snapshot's learner. An unseen task is scored as the
        worker will first see it: in the learner's next free slot (the initial
        learner has one slot even with no named task), else in a task added to a
        copy of the learner (the snapshot's learner is never changed).
        """
        idx = self.task_index(name)
        if idx is not None:
            return self.learner, idx
        slot = len(self.task_names)
        if slot < self.learner.n_tasks:
            return self.learner, slot
        copy = learners.from_state_dict(self.learner.state_dict())
        return copy, copy.add_task()


# ---------------------------------------------------------------- encoding
def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def encode(snapshot: Snapshot) -> tuple[bytes, bytes]:
    """``(header JSON, npz bytes)`` of a snapshot."""
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, Any] = {}
    for key, value in snapshot.learner.state_dict().items():
        if isinstance(value, np.ndarray):
            arrays[_LEARNER + key] = value
        else:
            scalars[key] = _jsonable(value)
    for name, arr in snapshot.counters.items():
        arrays[_COUNTER + name] = np.asarray(arr, dtype=np.int64)
    for name, arr in snapshot.errors.items():
        arrays[_ERROR + name] = np.asarray(arr, dtype=np.float64)
    arrays[_LABELLED] = np.asarray(snapshot.labelled, dtype=np.int64).reshape(-1, 3)
    arrays[_REQUESTED] = np.asarray(snapshot.requested, dtype=np.int64).reshape(-1, 3)
    header = {
        "format": FORMAT,
        "model": snapshot.model,
        "generation": int(snapshot.generation),
        "learner": snapshot.learner.name,
        "last_id": snapshot.last_id,
        "created": float(snapshot.created),
        "task_names": list(snapshot.task_names),
        "counters": {k: int(v) for k, v in snapshot.totals.items()},
        "scalars": scalars,
    }
    return json.dumps(header).encode(), npz_bytes(arrays)


#: Timestamp of every archive member: a fixed one, so that the same state always encodes
#: to the same bytes (np.savez stamps the time of writing).
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An ``.npz`` archive of ``arrays`` (what ``np.savez`` writes, ``np.load`` reads), with
    fixed member timestamps: equal arrays give equal bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=_ZIP_TIME)
            with zf.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(arr), allow_pickle=False)
    return buf.getvalue()


def decode(
    header_json: bytes | str,
    npz_bytes: bytes,
    version: int = 0,
    expected: Expected | None = None,
) -> Snapshot:
    """Rebuild a :class:`Snapshot`, checked against ``expected`` (module docstring).

    Raises :class:`SnapshotInvalid` (a ``ValueError``) with the reason for a
    malformed, foreign or oversized snapshot; nothing larger than the model's
    budget is allocated first.
    """
    bounds = expected or Expected()
    try:
        return _decode(header_json, npz_bytes, int(version), bounds)
    except SnapshotInvalid:
        raise
    except (Exception, MemoryError) as exc:
        raise SnapshotInvalid(f"snapshot cannot be loaded: {type(exc).__name__}: {exc}") from None


_ENTRY_ID = re.compile(r"^[0-9]{1,20}-[0-9]{1,20}$")


def _field(header: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = header.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise SnapshotInvalid(f"snapshot header field {key!r} is missing or not {_kind(kind)}")
    return value


def _kind(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _header(header_json: bytes | str) -> dict[str, Any]:
    try:
        header = json.loads(header_json)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SnapshotInvalid(f"snapshot header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise SnapshotInvalid(f"snapshot header is a JSON {type(header).__name__}, not an object")
    if header.get("format") != FORMAT:
        raise SnapshotInvalid(f"unsupported snapshot format {header.get('format')!r}")
    _field(header, "generation", int)
    _field(header, "learner", str)
    _field(header, "created", (int, float))
    _field(header, "scalars", dict)
    last_id = _field(header, "last_id", str)
    if last_id != "0-0" and not _ENTRY_ID.match(last_id):
        raise SnapshotInvalid(f"snapshot last_id {last_id!r} is not a log entry id")
    names = _field(header, "task_names", list)
    if not all(isinstance(t, str) and t for t in names) or len(set(names)) != len(names):
        raise SnapshotInvalid("snapshot task_names must be distinct non-empty strings")
    counters = header.get("counters", {})
    if not isinstance(counters, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in counters.values()
    ):
        raise SnapshotInvalid("snapshot header field 'counters' must map names to integers")
    return header


def _check_shape(header: dict[str, Any], scalars: dict[str, Any], bounds: Expected) -> int:
    """Check learner, dimension and task count against ``bounds``; returns K."""
    name = header["learner"]
    if scalars.get("learner") != name:
        raise SnapshotInvalid(
            f"snapshot state is for learner {scalars.get('learner')!r}, header says {name!r}"
        )
    if bounds.learner is not None and name != bounds.learner:
        raise SnapshotInvalid(f"snapshot is of learner {name!r}, the model's is {bounds.learner!r}")
    d, k = scalars.get("n_features"), scalars.get("n_tasks")
    if not isinstance(d, int) or not isinstance(k, int) or d < 1 or k < 1:
        raise SnapshotInvalid(f"snapshot shape n_features={d!r}, n_tasks={k!r} is not valid")
    if bounds.n_features is not None and d != bounds.n_features:
        raise SnapshotInvalid(f"snapshot has {d} features, the model has {bounds.n_features}")
    if k > bounds.max_tasks:
        raise SnapshotInvalid(f"snapshot has {k} tasks, over the maximum of {bounds.max_tasks}")
    if len(header["task_names"]) > k:
        raise SnapshotInvalid(f"snapshot names {len(header['task_names'])} tasks but has {k}")
    return k


def _member_headers(zf: zipfile.ZipFile) -> dict[str, tuple[str, int]]:
    """``{member name: (kind of member, declared bytes)}`` from each ``.npy`` header,
    with the dtype checked, before any member's data is inflated."""
    out: dict[str, tuple[str, int]] = {}
    for info in zf.infolist():
        name = info.filename.removesuffix(".npy")
        with zf.open(info) as f:
            major, _ = np.lib.format.read_magic(f)
            read_header = (
                np.lib.format.read_array_header_1_0
                if major == 1
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(f)
        if dtype.hasobject or dtype.kind not in "biuf":
            raise SnapshotInvalid(f"snapshot member {name!r} has dtype {dtype}, not a number")
        declared = math.prod(int(n) for n in shape) * dtype.itemsize
        kind = "learner" if name.startswith(_LEARNER) else "other"
        out[name] = (kind, declared)
    return out


def _read_arrays(npz_bytes: bytes, bounds: Expected) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(io.BytesIO(npz_bytes)) as zf:
        members = _member_headers(zf)
        learner_bytes = sum(n for kind, n in members.values() if kind == "learner")
        other_bytes = sum(n for kind, n in members.values() if kind == "other")
        if learner_bytes > bounds.max_bytes:
            raise SnapshotInvalid(
                f"snapshot arrays declare {learner_bytes} bytes of learner state, over the "
                f"model's budget of {bounds.max_bytes} bytes"
            )
        if other_bytes > MAX_BOOKKEEPING_BYTES:
            raise SnapshotInvalid(
                f"snapshot counters and ids declare {other_bytes} bytes, over "
                f"{MAX_BOOKKEEPING_BYTES}"
            )
        out: dict[str, np.ndarray] = {}
        for info in zf.infolist():
            with zf.open(info) as f:
                out[info.filename.removesuffix(".npy")] = np.lib.format.read_array(
                    f, allow_pickle=False
                )
        return out


def _probe(learner: Learner) -> None:
    """Score a vector of ones for every task: arrays of the wrong shape fail here, not
    while the model serves."""
    # multiview learners: task t's instance has its own dimension d_j (``view_dims``)
    dims = getattr(learner, "view_dims", None) or [learner.n_features] * learner.n_tasks
    for t in range(learner.n_tasks):
        if not math.isfinite(learner.decision_one(np.ones(dims[t]), t)):
            raise SnapshotInvalid(f"snapshot state scores task {t} as a non-finite number")


def _decode(header_json: bytes | str, npz_bytes: bytes, version: int, bounds: Expected) -> Snapshot:
    header = _header(header_json)
    scalars: dict[str, Any] = dict(header["scalars"])
    k = _check_shape(header, scalars, bounds)
    state = dict(scalars)
    counters: dict[str, np.ndarray] = {}
    errors: dict[str, np.ndarray] = {}
    labelled = _empty_labelled()
    requested = _empty_labelled()
    for key, arr in _read_arrays(npz_bytes, bounds).items():
        if key.startswith(_LEARNER):
            state[key[len(_LEARNER) :]] = arr
        elif key.startswith(_COUNTER):
            if arr.ndim != 1 or arr.shape[0] > k:
                raise SnapshotInvalid(f"snapshot counter {key!r} has shape {arr.shape}, K is {k}")
            counters[key[len(_COUNTER) :]] = arr.astype(np.int64)
        elif key.startswith(_ERROR):
            if arr.ndim != 1 or arr.shape[0] > k:
                raise SnapshotInvalid(f"snapshot error sum {key!r} has shape {arr.shape}, K is {k}")
            errors[key[len(_ERROR) :]] = arr.astype(np.float64)
        elif key == _LABELLED:
            labelled = arr.astype(np.int64).reshape(-1, 3)
        elif key == _REQUESTED:
            requested = arr.astype(np.int64).reshape(-1, 3)
    params = {
        key[len("param.") :]: (v.item() if isinstance(v, np.ndarray) and v.ndim == 0 else v)
        for key, v in state.items()
        if key.startswith("param.")
    }
    need = learners.get(header["learner"]).state_bytes(int(scalars["n_features"]), k, **params)
    if need > bounds.max_bytes:
        raise SnapshotInvalid(
            f"snapshot's learner needs about {need} bytes of state, over the model's budget "
            f"of {bounds.max_bytes} bytes"
        )
    learner = learners.from_state_dict(state)
    _probe(learner)
    return Snapshot(
        version=version,
        generation=int(header["generation"]),
        learner=learner,
        task_names=[str(t) for t in header["task_names"]],
        last_id=str(header["last_id"]),
        created=float(header["created"]),
        counters=counters,
        model=str(header.get("model", "")),
        totals={str(key): int(v) for key, v in header.get("counters", {}).items()},
        labelled=labelled,
        requested=requested,
        errors=errors,
    )


# ---------------------------------------------------------------- Redis I/O
_FIELDS = ("version", "header", "arrays")


def _from_reply(reply: list[Any], expected: Expected | None) -> Snapshot | None:
    version, header, arrays = reply
    if version is None or header is None or arrays is None:
        return None
    if isinstance(arrays, str):
        raise ValueError("snapshot arrays must be read with decode_responses=False")
    try:
        number = int(version)
    except ValueError:
        raise SnapshotInvalid(f"snapshot version {version!r} is not an integer") from None
    return decode(header, arrays, number, expected)


def read_snapshot(r: redis.Redis, model: str, expected: Expected | None = None) -> Snapshot | None:
    """The model's latest snapshot, or None when there is none.

    ``r`` must return bytes (``decode_responses=False``). Raises
    :class:`SnapshotInvalid` when the stored snapshot does not fit ``expected``.
    """
    return _from_reply(r.hmget(snapshot_key(model), _FIELDS), expected)


#: Snapshots with more bytes than this are decoded in a worker thread (off the event loop).
DECODE_IN_THREAD_BYTES = 64 * 1024


async def read_snapshot_async(
    r: aredis.Redis, model: str, expected: Expected | None = None
) -> Snapshot | None:
    """:func:`read_snapshot` for an asyncio client; a large snapshot is decoded (and its
    learner rebuilt and probed) in a worker thread, so the event loop keeps serving."""
    reply = await r.hmget(snapshot_key(model), _FIELDS)
    arrays = reply[2]
    if isinstance(arrays, bytes) and len(arrays) > DECODE_IN_THREAD_BYTES:
        return await asyncio.to_thread(_from_reply, reply, expected)
    return _from_reply(reply, expected)


def read_version(r: redis.Redis, model: str) -> int | None:
    """The version of the latest snapshot, or None when there is none."""
    v = r.hget(snapshot_key(model), "version")
    return None if v is None else int(v)


async def read_version_async(r: aredis.Redis, model: str) -> int | None:
    """:func:`read_version` for an asyncio client."""
    v = await r.hget(snapshot_key(model), "version")
    return None if v is None else int(v)


def write_snapshot(
    r: redis.Redis, model: str, snapshot: Snapshot, owner: str | None = None, keep: int = 1
) -> int:
    """Write ``snapshot`` atomically and return its new version (also set on ``snapshot``).

    With ``owner`` the write happens only while ``owner`` holds the model's
    lease; it also refuses a snapshot of another generation than the model's
    config (another configuration or another incarnation of the name) and a
    snapshot of a deleted model. Every refusal raises :class:`SnapshotFenced`
    and writes nothing. With ``keep`` > 1 the snapshot it replaces moves to the
    model's snapshot history, which keeps the ``keep - 1`` newest (rollback).
    """
    header, arrays = encode(snapshot)
    result = int(
        WRITE_SNAPSHOT.run(
            r,
            [snapshot_key(model), lease_key(model), config_key(model), snapshot_history_key(model)],
            [header, arrays, str(snapshot.generation), owner or "", str(keep)],
        )
    )
    if result == -1:
        raise SnapshotFenced(f"worker {owner} no longer holds the lease of model {model!r}")
    if result == -2:
        raise SnapshotFenced(f"model {model!r} was reconfigured (generation changed)")
    if result == -3:
        raise SnapshotFenced(f"model {model!r} was deleted")
    snapshot.version = result
    return result
