"""Encoding and decoding of the entries of a model's log (``omtl:{m}:log``).

Every entry has a field ``k`` naming its kind:

* ``k=e`` one event: ``task``; x as exactly one of ``x`` (JSON: a dense list of
  numbers, or ``{"indices": [...], "values": [...]}``), ``x32`` (raw
  little-endian float32, ``4 d`` bytes) or ``xi`` + ``xv`` (raw little-endian
  int32 indices and float32 values); optional ``y`` (decimal text) and ``ref``.
* ``k=b`` a batch of ``n`` events: ``task`` (one name for all rows) or
  ``tasks`` (JSON list of n names); ``X32`` (raw LE float32, ``n d``,
  row-major); optional ``y32`` (raw LE float32, n values, NaN = unlabelled),
  or instead ``y64`` (raw LE float64) when a label is not exactly a float32
  (regression labels are kept exactly), and ``refs`` (JSON list of n strings or nulls). Row i of batch entry E has
  the event id ``E/i``.
* ``k=l`` a label: ``event`` (an entry id, or ``E/i`` for a batch row), ``y``
  (decimal text), optional ``annotator``.
* ``k=v`` one multiview round (docs/architecture.md, "Multiview rounds"):
  ``task`` (the round's task, one of the views); ``views`` (JSON list of the m
  task names whose instances the round carries); the m instances as exactly
  one of ``vx`` (JSON list of m vectors, each dense or sparse as for ``x``),
  ``vx32`` + ``vlen`` (raw LE float32 of the m dense views one after the other,
  raw LE int32 dimension of each) or ``vxi`` + ``vxv`` + ``vlen`` (raw LE int32
  indices and float32 values of the m sparse views one after the other, raw LE
  int32 number of stored values of each); optional ``y`` and ``ref``. A task of
  the model missing from ``views`` is the zero vector in that round.

Producers with Redis access may XADD these entries themselves; the binary
encodings avoid the cost of parsing decimal floats.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

__all__ = [
    "BatchEvent",
    "CodecError",
    "Event",
    "Label",
    "MultiviewEvent",
    "X",
    "check_float32_range",
    "decode_entry",
    "decode_flat",
    "read_binary_event",
    "encode_batch",
    "encode_event",
    "encode_label",
    "encode_multiview",
    "entry_id_tuple",
    "format_y",
    "parse_event_id",
    "parse_x_json",
    "read_labelled_batch",
    "split_event_id",
]

#: The one definition of the entry layout: field names and kind codes. The
#: encoders below write them, the decoders read them, and the label script of
#: :mod:`service.store.scripts` is generated from them.
KIND = "k"
KIND_EVENT = "e"
KIND_BATCH = "b"
KIND_LABEL = "l"
KIND_MULTIVIEW = "v"
TASK = "task"
X_JSON = "x"
X32 = "x32"
XI = "xi"
XV = "xv"
Y = "y"
REF = "ref"
N = "n"
TASKS = "tasks"
X32_ROWS = "X32"
Y32 = "y32"
Y64 = "y64"
REFS = "refs"
EVENT = "event"
ANNOTATOR = "annotator"
VIEWS = "views"
VX_JSON = "vx"
VX32 = "vx32"
VXI = "vxi"
VXV = "vxv"
VLEN = "vlen"
#: Fields holding raw bytes rather than text.
BINARY_FIELDS = frozenset({X32, XI, XV, X32_ROWS, Y32, Y64, VX32, VXI, VXV, VLEN})

#: A decoded feature vector: dense values, or a sparse ``(indices, values)`` pair.
X = np.ndarray | tuple[np.ndarray, np.ndarray]

_F32 = np.dtype("<f4")
_F64 = np.dtype("<f8")
#: The largest magnitude a float32 field holds (beyond it a value becomes infinite).
FLOAT32_MAX = float(np.finfo(np.float32).max)
_I32 = np.dtype("<i4")
_ENTRY_ID = re.compile(r"^(\d+)-(\d+)$")
_EVENT_ID = re.compile(r"^(\d+)-(\d+)(?:/(\d+))?$")


class CodecError(ValueError):
    """An entry that cannot be decoded; the message is the reason."""


@dataclass(slots=True)
class Event:
    """One event: ``x`` for ``task``, with an optional label ``y`` and ``ref``."""

    id: str
    task: str
    x: X
    y: float | None
    ref: str | None


@dataclass(slots=True)
class BatchEvent:
    """``n`` events in one entry: row i has the event id ``f"{id}/{i}"``.

    ``y`` holds NaN for the unlabelled rows; ``refs`` is None when absent.
    """

    id: str
    tasks: list[str]
    X: np.ndarray
    y: np.ndarray
    refs: list[str | None] | None

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])


@dataclass(slots=True)
class MultiviewEvent:
    """One multiview round: the instance of every task in ``views`` (by task name, in
    the entry's order), the round's ``task`` (one of them), optional ``y`` and ``ref``."""

    id: str
    task: str
    views: dict[str, X]
    y: float | None
    ref: str | None


@dataclass(slots=True)
class Label:
    """A label ``y`` for the event ``event`` (an entry id or ``E/i``)."""

    id: str
    event: str
    y: float
    annotator: str | None


# ---------------------------------------------------------------- helpers
def format_y(y: float) -> str:
    """Decimal text of a label: ``"1"``/``"-1"`` for integers, ``repr`` otherwise."""
    v = float(y)
    if not math.isfinite(v):
        raise ValueError(f"label y must be finite, got {y!r}")
    return str(int(v)) if v.is_integer() and abs(v) < 2**53 else repr(v)


def split_event_id(event_id: str) -> tuple[str, int | None]:
    """``"E/i"`` -> ``("E", i)``; a plain entry id ``"E"`` -> ``("E", None)``.

    Raises ``ValueError`` when the text is not an event id.
    """
    m = _EVENT_ID.match(event_id)
    if m is None:
        raise ValueError(
            f"not an event id: {event_id!r} (expected '<ms>-<seq>' or '<ms>-<seq>/<i>')"
        )
    entry = f"{m.group(1)}-{m.group(2)}"
    return entry, None if m.group(3) is None else int(m.group(3))


def parse_event_id(event_id: str) -> tuple[int, int, int]:
    """``"ms-seq/i"`` -> ``(ms, seq, i)``, with ``i = -1`` for a single-event entry."""
    m = _EVENT_ID.match(event_id)
    if m is None:
        raise ValueError(f"not an event id: {event_id!r}")
    return int(m.group(1)), int(m.group(2)), -1 if m.group(3) is None else int(m.group(3))


def entry_id_tuple(entry_id: str) -> tuple[int, int]:
    """``"ms-seq"`` -> ``(ms, seq)``, the order of the log."""
    m = _ENTRY_ID.match(entry_id)
    if m is None:
        raise ValueError(f"not an entry id: {entry_id!r}")
    return int(m.group(1)), int(m.group(2))


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def check_float32_range(values: np.ndarray, where: str = "x") -> None:
    """Raise ``ValueError`` when ``values`` (finite) hold a magnitude beyond float32's: the
    log stores features as float32, so the API refuses such a value and the worker
    dead-letters a JSON event written with one straight to the log, before a learner
    meets values its arithmetic overflows on (1e200 squared)."""
    if values.size and float(np.abs(values).max()) > FLOAT32_MAX:
        raise ValueError(
            f"{where} has a value beyond the float32 range (|v| <= {FLOAT32_MAX:.6g}) "
            "that the log stores features in"
        )


def parse_x_json(obj: Any, n_features: int) -> X:
    """Validate a JSON feature vector against the model's dimension.

    ``obj`` is a dense list of ``n_features`` numbers or
    ``{"indices": [...], "values": [...]}`` with integer indices in
    ``[0, n_features)``, every value finite and within float32's range
    (:func:`check_float32_range`). Returns a float64 array or an ``(int64, float64)``
    pair. Raises ``ValueError`` with a message on a wrong shape, type or value.
    """
    if isinstance(obj, Mapping):
        if set(obj) != {"indices", "values"}:
            raise ValueError("sparse x must have exactly the keys 'indices' and 'values'")
        idx_raw, val_raw = obj["indices"], obj["values"]
        if not isinstance(idx_raw, list) or not isinstance(val_raw, list):
            raise ValueError("sparse x: 'indices' and 'values' must be lists")
        if len(idx_raw) != len(val_raw):
            raise ValueError(
                f"sparse x: {len(idx_raw)} indices but {len(val_raw)} values (must be equal)"
            )
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in idx_raw):
            raise ValueError("sparse x: indices must be integers")
        if not all(_is_number(v) for v in val_raw):
            raise ValueError("sparse x: values must be numbers")
        # in Python first: an index beyond int64 (JSON carries any integer) cannot be converted
        if idx_raw and (min(idx_raw) < 0 or max(idx_raw) >= n_features):
            raise ValueError(f"sparse x: indices must lie in [0, {n_features})")
        idx = np.asarray(idx_raw, dtype=np.int64)
        val = np.asarray(val_raw, dtype=np.float64)
        if np.unique(idx).size != idx.size:
            raise ValueError("sparse x: indices must be unique")
        if not np.isfinite(val).all():
            raise ValueError("x contains NaN or infinite values")
        check_float32_range(val)
        return idx, val
    if isinstance(obj, list | tuple):
        if len(obj) != n_features:
            raise ValueError(f"x has dimension {len(obj)}, expected {n_features}")
        if not all(_is_number(v) for v in obj):
            raise ValueError("x must be a list of numbers")
        arr = np.asarray(obj, dtype=np.float64)
        if not np.isfinite(arr).all():
            raise ValueError("x contains NaN or infinite values")
        check_float32_range(arr)
        return arr
    raise ValueError("x must be a list of numbers or {'indices': [...], 'values': [...]}")


# ---------------------------------------------------------------- encoding
def _as_sparse(x: Any) -> tuple[np.ndarray, np.ndarray] | None:
    if isinstance(x, Mapping):
        return np.asarray(x["indices"], dtype=np.int64), np.asarray(x["values"], np.float64)
    if isinstance(x, tuple) and len(x) == 2:
        return np.asarray(x[0], dtype=np.int64), np.asarray(x[1], dtype=np.float64)
    return None


def encode_event(
    task: str,
    x: Any,
    y: float | None = None,
    ref: str | None = None,
    binary: bool = False,
) -> dict[str, bytes | str]:
    """Fields of one ``k=e`` entry.

    ``x`` is a dense sequence/array, or sparse as ``{"indices", "values"}`` or an
    ``(indices, values)`` pair. ``binary`` selects ``x32`` / ``xi`` + ``xv``
    (float32) over JSON.
    """
    fields: dict[str, bytes | str] = {KIND: KIND_EVENT, TASK: str(task)}
    sparse = _as_sparse(x)
    if binary:
        if sparse is None:
            fields[X32] = np.ascontiguousarray(x, dtype=_F32).tobytes()
        else:
            fields[XI] = np.ascontiguousarray(sparse[0], dtype=_I32).tobytes()
            fields[XV] = np.ascontiguousarray(sparse[1], dtype=_F32).tobytes()
    elif sparse is None:
        fields[X_JSON] = orjson.dumps(np.asarray(x, dtype=np.float64).tolist()).decode()
    else:
        fields[X_JSON] = orjson.dumps(
            {"indices": sparse[0].tolist(), "values": sparse[1].tolist()}
        ).decode()
    if y is not None:
        fields[Y] = format_y(y)
    if ref is not None:
        fields[REF] = str(ref)
    return fields


def encode_batch(
    tasks: str | Sequence[str],
    X: Any,
    y: Sequence[float | None] | np.ndarray | None = None,
    refs: Sequence[str | None] | None = None,
) -> dict[str, bytes | str]:
    """Fields of one ``k=b`` entry: the rows of the dense 2-D ``X`` as float32.

    ``tasks`` is one name for every row or one per row; ``y`` holds None or NaN
    for unlabelled rows.
    """
    arr = np.ascontiguousarray(X, dtype=_F32)
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(f"X must be a non-empty 2-D array, got shape {arr.shape}")
    n = int(arr.shape[0])
    fields: dict[str, bytes | str] = {KIND: KIND_BATCH, N: str(n)}
    if isinstance(tasks, str):
        fields[TASK] = tasks
    else:
        names = [str(t) for t in tasks]
        if len(names) != n:
            raise ValueError(f"{len(names)} task names for {n} rows")
        fields[TASKS] = orjson.dumps(names).decode()
    fields[X32_ROWS] = arr.tobytes()
    if y is not None:
        exact = np.asarray([np.nan if v is None else float(v) for v in y], dtype=_F64)
        if exact.shape != (n,):
            raise ValueError(f"{exact.shape[0]} labels for {n} rows")
        ys = exact.astype(_F32)
        labelled = ~np.isnan(exact)
        if np.array_equal(ys[labelled].astype(_F64), exact[labelled]):
            fields[Y32] = ys.tobytes()
        else:  # a label float32 cannot hold exactly (regression): stored exactly
            fields[Y64] = exact.tobytes()
    if refs is not None:
        if len(refs) != n:
            raise ValueError(f"{len(refs)} refs for {n} rows")
        fields[REFS] = orjson.dumps([None if r is None else str(r) for r in refs]).decode()
    return fields


def encode_multiview(
    task: str,
    views: Mapping[str, Any],
    y: float | None = None,
    ref: str | None = None,
    binary: bool = True,
) -> dict[str, bytes | str]:
    """Fields of one ``k=v`` entry: the instances ``views`` (task name -> x) of one round.

    Every x is dense or sparse as for :func:`encode_event`. ``binary`` writes
    ``vx32`` when every view is dense, else ``vxi`` + ``vxv`` (a dense view then
    stored by its non-zero entries, which is exact); otherwise ``vx`` (JSON).
    ``task`` must be one of the views.
    """
    names = [str(name) for name in views]
    if not names:
        raise ValueError("a multiview round needs at least one view")
    if str(task) not in names:
        raise ValueError(f"the round's task {task!r} must be one of its views")
    fields: dict[str, bytes | str] = {
        KIND: KIND_MULTIVIEW,
        TASK: str(task),
        VIEWS: orjson.dumps(names).decode(),
    }
    values = list(views.values())
    sparse = [_as_sparse(x) for x in values]
    if not binary:
        fields[VX_JSON] = orjson.dumps(
            [
                np.asarray(x, dtype=np.float64).tolist()
                if sp_ is None
                else {"indices": sp_[0].tolist(), "values": sp_[1].tolist()}
                for x, sp_ in zip(values, sparse, strict=True)
            ]
        ).decode()
    elif all(sp_ is None for sp_ in sparse):
        dense = [np.ascontiguousarray(x, dtype=_F32).reshape(-1) for x in values]
        fields[VX32] = b"".join(d.tobytes() for d in dense)
        fields[VLEN] = np.asarray([d.shape[0] for d in dense], dtype=_I32).tobytes()
    else:
        pairs = []
        for x, sp_ in zip(values, sparse, strict=True):
            if sp_ is None:
                dense64 = np.asarray(x, dtype=np.float64).reshape(-1)
                nz = np.flatnonzero(dense64)
                sp_ = (nz, dense64[nz])
            pairs.append(sp_)
        fields[VXI] = b"".join(np.ascontiguousarray(i, dtype=_I32).tobytes() for i, _ in pairs)
        fields[VXV] = b"".join(np.ascontiguousarray(v, dtype=_F32).tobytes() for _, v in pairs)
        fields[VLEN] = np.asarray([i.shape[0] for i, _ in pairs], dtype=_I32).tobytes()
    if y is not None:
        fields[Y] = format_y(y)
    if ref is not None:
        fields[REF] = str(ref)
    return fields


def encode_label(event_id: str, y: float, annotator: str | None = None) -> dict[str, bytes | str]:
    """Fields of one ``k=l`` entry."""
    split_event_id(event_id)
    fields: dict[str, bytes | str] = {KIND: KIND_LABEL, EVENT: event_id, Y: format_y(y)}
    if annotator is not None:
        fields[ANNOTATOR] = str(annotator)
    return fields


# ---------------------------------------------------------------- decoding
def _text(v: Any, name: str) -> str:
    if isinstance(v, bytes):
        try:
            return v.decode()
        except UnicodeDecodeError:
            raise CodecError(f"field {name!r} is not UTF-8 text") from None
    if isinstance(v, str):
        return v
    raise CodecError(f"field {name!r} has an unexpected type {type(v).__name__}")


def _raw(v: Any) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode("latin-1", "replace")


def _float(v: Any, name: str) -> float:
    text = _text(v, name)
    try:
        f = float(text)
    except ValueError:
        raise CodecError(f"field {name!r} is not a number: {text[:40]!r}") from None
    if not math.isfinite(f):
        raise CodecError(f"field {name!r} must be finite, got {text[:40]!r}")
    return f


def _json(v: Any, name: str) -> Any:
    try:
        return orjson.loads(v)
    except orjson.JSONDecodeError:
        raise CodecError(f"field {name!r} is not valid JSON") from None


def _str_keys(fields: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        out[key.decode("utf-8", "replace") if isinstance(key, bytes) else str(key)] = value
    return out


def _decode_x(f: Mapping[str, Any], n_features: int | None) -> X:
    present = [name for name in (X_JSON, X32, XI) if name in f]
    if len(present) != 1:
        raise CodecError("an event needs exactly one of the fields x, x32, xi+xv")
    if X32 in f:
        raw = _raw(f[X32])
        if len(raw) % 4:
            raise CodecError(f"x32 has {len(raw)} bytes, not a multiple of 4")
        arr = np.frombuffer(raw, dtype=_F32)
        if n_features is not None and arr.shape[0] != n_features:
            raise CodecError(f"x has dimension {arr.shape[0]}, expected {n_features}")
        if not np.isfinite(arr).all():
            raise CodecError("x contains NaN or infinite values")
        return arr
    if XI in f:
        if XV not in f:
            raise CodecError("field xi needs xv")
        ri, rv = _raw(f[XI]), _raw(f[XV])
        if len(ri) % 4 or len(ri) != len(rv):
            raise CodecError("xi and xv must hold the same number of 4-byte values")
        idx = np.frombuffer(ri, dtype=_I32).astype(np.int64)
        val = np.frombuffer(rv, dtype=_F32).astype(np.float64)
        if n_features is not None and idx.size and (idx.min() < 0 or idx.max() >= n_features):
            raise CodecError(f"x index out of range: indices must lie in [0, {n_features})")
        if not np.isfinite(val).all():
            raise CodecError("x contains NaN or infinite values")
        return idx, val
    obj = _json(f[X_JSON], X_JSON)
    if n_features is None:
        n_features = len(obj) if isinstance(obj, list) else 2**31 - 1
    try:
        return parse_x_json(obj, n_features)
    except ValueError as exc:
        raise CodecError(str(exc)) from None


def _decode_event(entry_id: str, f: Mapping[str, Any], n_features: int | None) -> Event:
    if TASK not in f:
        raise CodecError("an event needs the field task")
    task = _text(f[TASK], TASK)
    if not task:
        raise CodecError("task must not be empty")
    x = _decode_x(f, n_features)
    y = _float(f[Y], Y) if Y in f else None
    ref = _text(f[REF], REF) if REF in f else None
    return Event(entry_id, task, x, y, ref)


def _decode_batch(entry_id: str, f: Mapping[str, Any], n_features: int | None) -> BatchEvent:
    try:
        n = int(_text(f.get(N, ""), N))
    except ValueError:
        raise CodecError("a batch needs an integer field n") from None
    if n < 1:
        raise CodecError(f"a batch needs n >= 1, got {n}")
    if X32_ROWS not in f:
        raise CodecError("a batch needs the field X32")
    raw = _raw(f[X32_ROWS])
    if len(raw) % (4 * n):
        raise CodecError(f"X32 has {len(raw)} bytes, not n * d float32 values for n = {n}")
    X = np.frombuffer(raw, dtype=_F32).reshape(n, -1)
    if n_features is not None and X.shape[1] != n_features:
        raise CodecError(f"X has {X.shape[1]} columns, expected {n_features}")
    if not np.isfinite(X).all():
        raise CodecError("X contains NaN or infinite values")
    if (TASK in f) == (TASKS in f):
        raise CodecError("a batch needs exactly one of the fields task and tasks")
    if TASK in f:
        name = _text(f[TASK], TASK)
        if not name:
            raise CodecError("task must not be empty")
        tasks = [name] * n
    else:
        tasks = _json(f[TASKS], TASKS)
        if not isinstance(tasks, list) or len(tasks) != n:
            raise CodecError(f"tasks must be a JSON list of {n} names")
        try:
            distinct = set(tasks)
        except TypeError:
            raise CodecError("tasks must be non-empty strings") from None
        if "" in distinct or {type(t) for t in distinct} != {str}:
            raise CodecError("tasks must be non-empty strings")
    if Y32 in f and Y64 in f:
        raise CodecError("a batch has at most one of the fields y32 and y64")
    if Y32 in f or Y64 in f:
        field, dtype = (Y32, _F32) if Y32 in f else (Y64, _F64)
        ry = _raw(f[field])
        if len(ry) != dtype.itemsize * n:
            raise CodecError(f"{field} has {len(ry)} bytes, expected {dtype.itemsize * n}")
        y = np.frombuffer(ry, dtype=dtype).astype(np.float64)
        if np.isinf(y).any():
            raise CodecError(f"{field} contains infinite values")
    else:
        y = np.full(n, np.nan)
    refs: list[str | None] | None = None
    if REFS in f:
        refs = _json(f[REFS], REFS)
        if not isinstance(refs, list) or len(refs) != n:
            raise CodecError(f"refs must be a JSON list of {n} strings or nulls")
        if not all(r is None or isinstance(r, str) for r in refs):
            raise CodecError("refs must be strings or nulls")
    return BatchEvent(entry_id, tasks, X, y, refs)


def _view_lengths(f: Mapping[str, Any], m: int) -> np.ndarray:
    if VLEN not in f:
        raise CodecError("binary views need the field vlen")
    raw = _raw(f[VLEN])
    if len(raw) != 4 * m:
        raise CodecError(f"vlen has {len(raw)} bytes, expected {4 * m} for {m} views")
    lengths = np.frombuffer(raw, dtype=_I32).astype(np.int64)
    if lengths.min() < 0:
        raise CodecError("vlen holds a negative length")
    return lengths


def _decode_views(f: Mapping[str, Any], names: list[str]) -> list[X]:
    m = len(names)
    present = [name for name in (VX_JSON, VX32, VXI) if name in f]
    if len(present) != 1:
        raise CodecError("a multiview round needs exactly one of the fields vx, vx32, vxi+vxv")
    if VX_JSON in f:
        objs = _json(f[VX_JSON], VX_JSON)
        if not isinstance(objs, list) or len(objs) != m:
            raise CodecError(f"vx must be a JSON list of {m} vectors (one per view)")
        out: list[X] = []
        for name, obj in zip(names, objs, strict=True):
            dim = len(obj) if isinstance(obj, list) else 2**31 - 1
            try:
                out.append(parse_x_json(obj, dim))
            except ValueError as exc:
                raise CodecError(f"view {name!r}: {exc}") from None
        return out
    lengths = _view_lengths(f, m)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    if VX32 in f:
        raw = _raw(f[VX32])
        if len(raw) != 4 * int(ends[-1]):
            raise CodecError(f"vx32 has {len(raw)} bytes, expected {4 * int(ends[-1])} (vlen)")
        flat = np.frombuffer(raw, dtype=_F32)
        if not np.isfinite(flat).all():
            raise CodecError("a view contains NaN or infinite values")
        return [flat[a:e] for a, e in zip(starts.tolist(), ends.tolist(), strict=True)]
    if VXV not in f:
        raise CodecError("field vxi needs vxv")
    ri, rv = _raw(f[VXI]), _raw(f[VXV])
    if len(ri) != len(rv) or len(ri) != 4 * int(ends[-1]):
        raise CodecError("vxi and vxv must each hold sum(vlen) 4-byte values")
    idx = np.frombuffer(ri, dtype=_I32).astype(np.int64)
    val = np.frombuffer(rv, dtype=_F32).astype(np.float64)
    if not np.isfinite(val).all():
        raise CodecError("a view contains NaN or infinite values")
    out = []
    for name, a, e in zip(names, starts.tolist(), ends.tolist(), strict=True):
        vi = idx[a:e]
        if vi.size and (vi.min() < 0 or np.unique(vi).size != vi.size):
            raise CodecError(f"view {name!r}: indices must be unique and non-negative")
        out.append((vi, val[a:e]))
    return out


def _decode_multiview(entry_id: str, f: Mapping[str, Any]) -> MultiviewEvent:
    if TASK not in f or VIEWS not in f:
        raise CodecError("a multiview round needs the fields task and views")
    task = _text(f[TASK], TASK)
    names = _json(f[VIEWS], VIEWS)
    if (
        not isinstance(names, list)
        or not names
        or not all(isinstance(n, str) and n for n in names)
        or len(set(names)) != len(names)
    ):
        raise CodecError("views must be a JSON list of distinct non-empty task names")
    if task not in names:
        raise CodecError(f"the round's task {task!r} is not one of its views")
    xs = _decode_views(f, names)
    y = _float(f[Y], Y) if Y in f else None
    ref = _text(f[REF], REF) if REF in f else None
    return MultiviewEvent(entry_id, task, dict(zip(names, xs, strict=True)), y, ref)


def _decode_label(entry_id: str, f: Mapping[str, Any]) -> Label:
    if EVENT not in f or Y not in f:
        raise CodecError("a label needs the fields event and y")
    event = _text(f[EVENT], EVENT)
    try:
        split_event_id(event)
    except ValueError as exc:
        raise CodecError(str(exc)) from None
    y = _float(f[Y], Y)
    annotator = _text(f[ANNOTATOR], ANNOTATOR) if ANNOTATOR in f else None
    return Label(entry_id, event, y, annotator)


def decode_entry(
    entry_id: str | bytes, fields: Mapping[Any, Any], n_features: int | None = None
) -> Event | BatchEvent | Label | MultiviewEvent:
    """Decode one log entry (keys and values as bytes or str).

    With ``n_features`` the dimension of x is checked (not of a multiview round's
    views: their dimensions are per task, the learner checks them). Raises
    :class:`CodecError` with the reason for anything malformed.
    """
    eid = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    f = _str_keys(fields)
    kind = f.get(KIND)
    if isinstance(kind, bytes):
        kind = kind.decode("utf-8", "replace")
    if kind == KIND_EVENT:
        return _decode_event(eid, f, n_features)
    if kind == KIND_BATCH:
        return _decode_batch(eid, f, n_features)
    if kind == KIND_LABEL:
        return _decode_label(eid, f)
    if kind == KIND_MULTIVIEW:
        return _decode_multiview(eid, f)
    raise CodecError(f"unknown entry kind k={kind!r} (expected e, b, l or v)")


def decode_flat(
    entry_id: str | bytes, flat: Sequence[Any], n_features: int | None = None
) -> Event | BatchEvent | Label | MultiviewEvent:
    """:func:`decode_entry` of a raw XREAD field list ``[field, value, field, value, ...]``."""
    return decode_entry(entry_id, dict(zip(flat[0::2], flat[1::2])), n_features)


_K_B, _E_B, _TASK_B, _X32_B, _Y_B, _REF_B = (
    name.encode() for name in (KIND, KIND_EVENT, TASK, X32, Y, REF)
)
_B_B, _N_B, _TASKS_B, _X32_ROWS_B, _Y32_B = (
    name.encode() for name in (KIND_BATCH, N, TASKS, X32_ROWS, Y32)
)


def read_binary_event(
    flat: Sequence[Any], x_bytes: int
) -> tuple[bytes, bytes, float | None, bytes | None] | None:
    """The worker's fast path: ``(task, x32 bytes, y, ref)`` of a raw XREAD field list.

    It reads a single dense event exactly as :func:`encode_event` with
    ``binary=True`` writes it (fields in the encoder's order: kind, task, x32,
    then optional y and ref) with ``x_bytes`` bytes of x. Anything else, or
    a ``y`` that is not a number, gives None: :func:`decode_flat` reads it
    then, with full validation. ``y`` may be NaN or infinite here; the caller
    checks it against the model's label kind.
    """
    n = len(flat)
    if not (
        6 <= n <= 10
        and flat[1] == _E_B
        and flat[0] == _K_B
        and flat[2] == _TASK_B
        and flat[4] == _X32_B
        and len(flat[5]) == x_bytes
    ):
        return None
    if n == 6:
        return flat[3], flat[5], None, None
    if flat[6] == _Y_B and (n == 8 or (n == 10 and flat[8] == _REF_B)):
        try:
            y = float(flat[7])
        except ValueError:
            return None
        return flat[3], flat[5], y, flat[9] if n == 10 else None
    if flat[6] == _REF_B and n == 8:
        return flat[3], flat[5], None, flat[7]
    return None


def read_labelled_batch(
    flat: Sequence[Any], x_bytes: int
) -> tuple[int, bytes | None, bytes | None, bytes, bytes] | None:
    """The worker's fast path for a batch: ``(n, task, tasks, X32 bytes, y32 bytes)``.

    It reads a batch entry exactly as :func:`encode_batch` writes it with a
    float32 label for every row and no refs (fields: kind, n, task or tasks,
    X32, y32), rows of ``x_bytes`` bytes; ``task`` is the one task name and
    ``tasks`` None, or ``task`` is None and ``tasks`` the raw JSON list. Nothing
    else is checked here (the labels' values, the task names, finiteness):
    anything else gives None, and :func:`decode_flat` reads the entry then,
    with full validation.
    """
    if not (
        len(flat) == 10
        and flat[1] == _B_B
        and flat[0] == _K_B
        and flat[2] == _N_B
        and flat[6] == _X32_ROWS_B
        and flat[8] == _Y32_B
    ):
        return None
    try:
        n = int(flat[3])
    except ValueError:
        return None
    if n < 1 or len(flat[7]) != n * x_bytes or len(flat[9]) != 4 * n:
        return None
    if flat[4] == _TASK_B:
        return n, flat[5], None, flat[7], flat[9]
    if flat[4] == _TASKS_B:
        return n, None, flat[5], flat[7], flat[9]
    return None
