"""Model export and import (one pickle-free file), the snapshot history, and rollback.

**The export file** is a zip archive with fixed member timestamps
(docs/architecture.md, "Export, import and rollback"):

* ``manifest.json``: ``format`` (:data:`EXPORT_FORMAT`), ``kind``
  (``"omtl-model-export"``), the model's ``name``, its configuration
  (``learner``, ``params``, ``n_features``, ``tasks``, ``seed``, ``kind``) and,
  per member, its byte length and SHA-256;
* ``snapshot/header.json``: the snapshot header without what belongs to one
  incarnation of one name (``model``, ``generation``);
* ``snapshot/arrays.npz``: the snapshot's arrays (numbers only, read with
  ``allow_pickle=False``).

The state exported is the model *detached from its log*: the label requests
still pending are counted as expired (their events stay in the source's log).
Everything is written canonically, so exporting an imported model gives the
same bytes as the file it was imported from. Reading checks the format, the
checksums and the sizes before anything is inflated, and the snapshot is
decoded against the configuration and the model limits like any stored one.

**Import** creates a new model (a new incarnation of the name) whose snapshot
is the file's, in one transaction with its configuration, so no worker can
load the model before the snapshot is there.

**Rollback** restores one of the snapshots the worker kept (the latest and the
history hash, ``OMTL_SNAPSHOT_KEEP``) and *discards* the log after it: the
model moves to a new generation, exactly as a reconfiguration does, with the
log, label bookkeeping and label requests cleared and the chosen state as its
snapshot. The owning worker sees the new generation at its next read, drops
what it holds and loads the restored snapshot; a snapshot it was about to write
is fenced (wrong generation). Replaying the log after the restored version
instead would rebuild exactly the state being rolled back from, since the
state is a deterministic function of the log.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from typing import Any

import numpy as np
import redis

from service.store import keys
from service.store.models import (
    ModelConfig,
    ModelLimits,
    _clock_us,
    _prepared,
    _reset_keys,
    _to_hash,
    expected_state,
    get_model,
    initial_snapshot,
    validate_model_name,
)
from service.store.snapshot import (
    Snapshot,
    SnapshotInvalid,
    decode,
    encode,
    read_snapshot,
)

__all__ = [
    "EXPORT_FORMAT",
    "ExportInvalid",
    "ModelExists",
    "ModelExport",
    "UnknownVersion",
    "export_model",
    "import_model",
    "read_export",
    "rollback_model",
    "snapshot_versions",
]

EXPORT_FORMAT = 1
_KIND = "omtl-model-export"
_MANIFEST = "manifest.json"
_HEADER = "snapshot/header.json"
_ARRAYS = "snapshot/arrays.npz"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
#: Most bytes of a manifest or snapshot header.
_MAX_JSON_BYTES = 64 * 1024**2
_CONFIG_FIELDS = ("learner", "params", "n_features", "tasks", "seed")
#: The limits are checked before :func:`_install`, which only rebuilds the configuration.
_UNBOUNDED = ModelLimits(max_bytes=1 << 62, max_tasks=1 << 62)


class ExportInvalid(ValueError):
    """An export file that cannot be imported (format, checksum, size or content)."""


class ModelExists(ValueError):
    """Import under a name that is taken."""


class UnknownVersion(LookupError):
    """A rollback to a snapshot version that is not kept."""


@dataclass(frozen=True)
class ModelExport:
    """The content of an export file: the model's name, configuration and snapshot."""

    name: str
    config: ModelConfig
    snapshot: Snapshot


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _detached(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` without pending label requests (counted as expired): a state that
    does not refer to events of a log it leaves behind."""
    pending = int(snapshot.requested.shape[0])
    if pending:
        totals = dict(snapshot.totals)
        totals["label_requests_expired"] = totals.get("label_requests_expired", 0) + pending
        snapshot.totals = totals
        snapshot.requested = np.zeros((0, 3), dtype=np.int64)
    return snapshot


def _portable_header(header: bytes) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(header)
    body.pop("model", None)
    body.pop("generation", None)
    return body


# ---------------------------------------------------------------- export
def export_model(r: redis.Redis, name: str, limits: ModelLimits | None = None) -> bytes:
    """The export file of model ``name`` (its latest snapshot, or its initial state).

    ``r`` must return bytes. Raises ``KeyError`` for an unknown model and
    :class:`SnapshotInvalid` when its stored snapshot cannot be read.
    """
    config = get_model(r, name)
    if config is None:
        raise KeyError(name)
    expected = expected_state(config, limits or ModelLimits())
    snap = read_snapshot(r, name, expected)
    if snap is None or snap.generation != config.generation:
        snap = initial_snapshot(name, config)
    header, arrays = encode(_detached(snap))
    header_bytes = _canonical(_portable_header(header))
    manifest = {
        "format": EXPORT_FORMAT,
        "kind": _KIND,
        "name": name,
        "config": {**{f: getattr(config, f) for f in _CONFIG_FIELDS}, "kind": config.kind},
        "members": {
            _HEADER: {
                "bytes": len(header_bytes),
                "sha256": hashlib.sha256(header_bytes).hexdigest(),
            },
            _ARRAYS: {"bytes": len(arrays), "sha256": hashlib.sha256(arrays).hexdigest()},
        },
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for member, data in (
            (_MANIFEST, _canonical(manifest)),
            (_HEADER, header_bytes),
            (_ARRAYS, arrays),
        ):
            info = zipfile.ZipInfo(member, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


# ---------------------------------------------------------------- import
def _member(zf: zipfile.ZipFile, name: str, most: int) -> bytes:
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise ExportInvalid(f"export file has no member {name!r}") from None
    if info.file_size > most:
        raise ExportInvalid(f"export member {name!r} declares {info.file_size} bytes, over {most}")
    with zf.open(info) as f:
        data = f.read(most + 1)
    if len(data) > most:
        raise ExportInvalid(f"export member {name!r} is larger than {most} bytes")
    return data


def _manifest(zf: zipfile.ZipFile) -> dict[str, Any]:
    try:
        manifest = json.loads(_member(zf, _MANIFEST, _MAX_JSON_BYTES))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ExportInvalid(f"export manifest is not JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != _KIND:
        raise ExportInvalid("not an omtl model export (manifest kind)")
    if manifest.get("format") != EXPORT_FORMAT:
        raise ExportInvalid(
            f"unsupported export format {manifest.get('format')!r} (this version reads "
            f"{EXPORT_FORMAT})"
        )
    members = manifest.get("members")
    if not isinstance(members, dict) or not all(
        isinstance(members.get(m), dict)
        and isinstance(members[m].get("bytes"), int)
        and isinstance(members[m].get("sha256"), str)
        for m in (_HEADER, _ARRAYS)
    ):
        raise ExportInvalid("export manifest lists no valid members")
    if not isinstance(manifest.get("config"), dict) or not isinstance(manifest.get("name"), str):
        raise ExportInvalid("export manifest has no configuration or name")
    return manifest


def _checked(zf: zipfile.ZipFile, manifest: dict[str, Any], name: str, most: int) -> bytes:
    declared = manifest["members"][name]
    if declared["bytes"] > most:
        raise ExportInvalid(
            f"export member {name!r} declares {declared['bytes']} bytes, over {most}"
        )
    data = _member(zf, name, declared["bytes"])
    if len(data) != declared["bytes"] or hashlib.sha256(data).hexdigest() != declared["sha256"]:
        raise ExportInvalid(f"export member {name!r} does not match its checksum")
    return data


def read_export(data: bytes, limits: ModelLimits | None = None) -> ModelExport:
    """Check and decode an export file; :class:`ExportInvalid` with the reason otherwise."""
    bounds = limits or ModelLimits()
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise ExportInvalid(f"not an export file (zip archive): {exc}") from None
    with zf:
        manifest = _manifest(zf)
        header = _checked(zf, manifest, _HEADER, _MAX_JSON_BYTES)
        arrays = _checked(zf, manifest, _ARRAYS, bounds.max_bytes + 256 * 1024**2)
    raw = manifest["config"]
    try:
        config = ModelConfig(**{f: raw[f] for f in _CONFIG_FIELDS if f in raw})
        name = validate_model_name(manifest["name"])
        body = json.loads(header)
        if not isinstance(body, dict):
            raise ExportInvalid("export snapshot header is not an object")
        body["generation"] = 0
        body["model"] = name
        snap = decode(json.dumps(body), arrays, 0, expected_state(config, bounds))
    except SnapshotInvalid as exc:
        raise ExportInvalid(f"export snapshot is not valid: {exc}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise ExportInvalid(f"export content is not valid: {exc}") from None
    return ModelExport(name=name, config=config, snapshot=snap)


def _install(
    r: redis.Redis,
    name: str,
    config: ModelConfig,
    snapshot: Snapshot,
    *,
    replace: bool,
    history: bool,
    version: int = 1,
) -> ModelConfig:
    """Store ``config`` as a new incarnation of ``name`` with ``snapshot`` (as snapshot
    ``version``) as its state, atomically (WATCH on the config: a concurrent change makes
    it fail and retry). ``history``: keep the snapshot history (rollback), else clear it."""
    config_key = keys.config_key(name)
    with r.pipeline(transaction=True) as p:
        while True:
            try:
                p.watch(config_key)
                existing = get_model(r, name)
                if existing is not None and not replace:
                    raise ModelExists(f"model {name!r} exists")
                fresh = config.model_copy(update={"generation": 0, "kind": None})
                stored = _prepared(name, fresh, None, _UNBOUNDED, 0)
                generation = max(
                    _clock_us(r.time()), 0 if existing is None else existing.generation + 1
                )
                stored = stored.model_copy(update={"generation": generation})
                snapshot.generation = generation
                snapshot.model = name
                header, arrays = encode(_detached(snapshot))
                p.multi()
                reset = _reset_keys(name)
                if history:
                    reset.remove(keys.snapshot_history_key(name))
                p.delete(*reset, config_key)
                p.hset(config_key, mapping=_to_hash(stored))  # type: ignore[arg-type]
                p.sadd(keys.models_key(), name)
                p.hset(
                    keys.snapshot_key(name),
                    mapping={"version": version, "header": header, "arrays": arrays},
                )
                snapshot.version = version
                if snapshot.last_id != "0-0":
                    # new entries must get ids after the restored position
                    log = keys.log_key(name)
                    p.xadd(log, {"k": "-"}, id=snapshot.last_id)
                    p.xdel(log, snapshot.last_id)
                p.execute()
                return stored
            except redis.WatchError:
                continue


def import_model(
    r: redis.Redis, data: bytes, name: str | None = None, limits: ModelLimits | None = None
) -> tuple[str, ModelConfig]:
    """Create a model from an export file (under ``name``, else the file's name); returns
    the name and the stored configuration.

    Raises :class:`ExportInvalid`, :class:`ModelExists` when the name is taken,
    and ``ValueError`` (:class:`service.store.models.ModelTooLarge`) for a model
    over ``limits``.
    """
    bounds = limits or ModelLimits()
    exported = read_export(data, bounds)
    target = validate_model_name(name or exported.name)
    config = exported.config
    bounds.check(
        config.learner,
        config.n_features,
        max(1, len(config.tasks), len(exported.snapshot.task_names)),
        config.params,
    )
    return target, _install(r, target, config, exported.snapshot, replace=False, history=False)


# ---------------------------------------------------------------- history and rollback
def snapshot_versions(r: redis.Redis, name: str) -> list[int]:
    """Versions a rollback can restore, newest first: the latest and the kept ones."""
    latest = r.hget(keys.snapshot_key(name), "version")
    fields = [_text(f) for f in r.hkeys(keys.snapshot_history_key(name))]
    kept = {int(f.split(":")[0]) for f in fields if f.endswith(":header")}
    if latest is not None:
        kept.add(int(latest))
    return sorted(kept, reverse=True)


def _text(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else v


def rollback_model(
    r: redis.Redis, name: str, version: int, limits: ModelLimits | None = None
) -> tuple[ModelConfig, Snapshot]:
    """Restore snapshot ``version`` of ``name`` and discard the log after it (module
    docstring). Returns the new configuration and the restored snapshot.

    Raises ``KeyError`` for an unknown model, :class:`UnknownVersion` for a version
    that is not kept, :class:`SnapshotInvalid` for a kept snapshot that cannot be read.
    """
    config = get_model(r, name)
    if config is None:
        raise KeyError(name)
    expected = expected_state(config, limits or ModelLimits())
    latest = r.hmget(keys.snapshot_key(name), ["version", "header", "arrays"])
    if latest[0] is not None and int(latest[0]) == version:
        header, arrays = latest[1], latest[2]
    else:
        header, arrays = r.hmget(
            keys.snapshot_history_key(name), [f"{version}:header", f"{version}:arrays"]
        )
    if header is None or arrays is None:
        kept = ", ".join(str(v) for v in snapshot_versions(r, name)) or "none"
        raise UnknownVersion(f"model {name!r} keeps no snapshot version {version} (kept: {kept})")
    if isinstance(arrays, str):
        raise ValueError("rollback needs a client with decode_responses=False")
    snap = decode(header, arrays, version, expected)
    following = 1 + (int(latest[0]) if latest[0] is not None else version)
    stored = _install(r, name, config, snap, replace=True, history=True, version=following)
    return stored, snap
