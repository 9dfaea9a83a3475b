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
  ``(ms, seq, row)``, row -1 for a single-event entry).

Nothing is pickled: the archive is read with ``np.load(allow_pickle=False)``,
so whoever can write to Redis cannot make a reader run code.
"""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import redis
import redis.asyncio as aredis

import learners
from learners import Learner
from service.store.keys import config_key, lease_key, snapshot_key
from service.store.scripts import WRITE_SNAPSHOT

__all__ = [
    "COUNTER_NAMES",
    "FORMAT",
    "Snapshot",
    "SnapshotFenced",
    "decode",
    "encode",
    "read_snapshot",
    "read_snapshot_async",
    "read_version",
    "read_version_async",
    "write_snapshot",
]

FORMAT = 1
#: Per-task counters, each an int64 array of length K.
COUNTER_NAMES = ("events", "labels", "mistakes", "queries", "predictions")

_LEARNER = "learner."
_COUNTER = "counter."
_LABELLED = "worker.labelled"


class SnapshotFenced(RuntimeError):
    """The writer no longer owns the model (lease lost or model reconfigured)."""


def _empty_labelled() -> np.ndarray:
    return np.zeros((0, 3), dtype=np.int64)


@dataclass
class Snapshot:
    """One model's state at a position of its log.

    ``last_id`` is the id of the last applied log entry (``"0-0"`` before any).
    ``counters`` maps each of :data:`COUNTER_NAMES` to an int64 array of length
    ``learner.n_tasks``; ``totals`` holds the worker's scalar counters;
    ``labelled`` the ``(ms, seq, row)`` ids of events labelled by label entries.
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

    def __post_init__(self) -> None:
        k = self.learner.n_tasks
        for name in COUNTER_NAMES:
            arr = np.asarray(self.counters.get(name, np.zeros(0)), dtype=np.int64)
            if arr.shape[0] < k:
                arr = np.concatenate([arr, np.zeros(k - arr.shape[0], dtype=np.int64)])
            self.counters[name] = arr

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
    arrays[_LABELLED] = np.asarray(snapshot.labelled, dtype=np.int64).reshape(-1, 3)
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
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **arrays)
    return json.dumps(header).encode(), buf.getvalue()


def decode(header_json: bytes | str, npz_bytes: bytes, version: int = 0) -> Snapshot:
    """Rebuild a :class:`Snapshot`; raises ``ValueError`` on a malformed or foreign one."""
    try:
        header = json.loads(header_json)
    except json.JSONDecodeError as exc:
        raise ValueError(f"snapshot header is not JSON: {exc}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"unsupported snapshot format {header.get('format')!r}")
    state: dict[str, Any] = dict(header["scalars"])
    counters: dict[str, np.ndarray] = {}
    labelled = _empty_labelled()
    with np.load(io.BytesIO(npz_bytes), allow_pickle=False) as npz:
        for key in npz.files:
            if key.startswith(_LEARNER):
                state[key[len(_LEARNER) :]] = npz[key]
            elif key.startswith(_COUNTER):
                counters[key[len(_COUNTER) :]] = npz[key].astype(np.int64)
            elif key == _LABELLED:
                labelled = npz[key].astype(np.int64).reshape(-1, 3)
    learner = learners.from_state_dict(state)
    return Snapshot(
        version=int(version),
        generation=int(header["generation"]),
        learner=learner,
        task_names=[str(t) for t in header["task_names"]],
        last_id=str(header["last_id"]),
        created=float(header["created"]),
        counters=counters,
        model=str(header.get("model", "")),
        totals={str(k): int(v) for k, v in header.get("counters", {}).items()},
        labelled=labelled,
    )


# ---------------------------------------------------------------- Redis I/O
_FIELDS = ("version", "header", "arrays")


def _from_reply(reply: list[Any]) -> Snapshot | None:
    version, header, arrays = reply
    if version is None or header is None or arrays is None:
        return None
    if isinstance(arrays, str):
        raise ValueError("snapshot arrays must be read with decode_responses=False")
    return decode(header, arrays, int(version))


def read_snapshot(r: redis.Redis, model: str) -> Snapshot | None:
    """The model's latest snapshot, or None when there is none.

    ``r`` must return bytes (``decode_responses=False``).
    """
    return _from_reply(r.hmget(snapshot_key(model), _FIELDS))


async def read_snapshot_async(r: aredis.Redis, model: str) -> Snapshot | None:
    """:func:`read_snapshot` for an asyncio client."""
    return _from_reply(await r.hmget(snapshot_key(model), _FIELDS))


def read_version(r: redis.Redis, model: str) -> int | None:
    """The version of the latest snapshot, or None when there is none."""
    v = r.hget(snapshot_key(model), "version")
    return None if v is None else int(v)


async def read_version_async(r: aredis.Redis, model: str) -> int | None:
    """:func:`read_version` for an asyncio client."""
    v = await r.hget(snapshot_key(model), "version")
    return None if v is None else int(v)


def write_snapshot(r: redis.Redis, model: str, snapshot: Snapshot, owner: str | None = None) -> int:
    """Write ``snapshot`` atomically and return its new version (also set on ``snapshot``).

    With ``owner`` the write happens only while ``owner`` holds the model's
    lease; it also refuses a snapshot of another generation than the model's
    config. Both refusals raise :class:`SnapshotFenced` and write nothing.
    """
    header, arrays = encode(snapshot)
    result = int(
        WRITE_SNAPSHOT.run(
            r,
            [snapshot_key(model), lease_key(model), config_key(model)],
            [header, arrays, str(snapshot.generation), owner or ""],
        )
    )
    if result == -1:
        raise SnapshotFenced(f"worker {owner} no longer holds the lease of model {model!r}")
    if result == -2:
        raise SnapshotFenced(f"model {model!r} was reconfigured (generation changed)")
    snapshot.version = result
    return result
