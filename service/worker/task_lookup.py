"""Task names of a batch entry to task indices in one compiled pass.

A batch entry that carries a task per row holds the names as a JSON list
(``["spam-ann","spam-bob",...]``, :func:`service.store.codec.encode_batch`). Parsing it
with ``orjson`` and looking every name up in a dict costs a Python string, a hash and
a dict probe per row: about 170 ns of the worker's 500-900 ns per event on entries of
100 rows (docs/architecture.md, "Applying log entries"). :class:`TaskLookup` reads the
list's bytes in one numba call instead: it walks the names, hashes each one (FNV-1a,
64 bits), probes an open-addressing table of the model's task names and compares the
bytes of the candidate, so a row costs a few nanoseconds and no object.

It answers only for the plain form every encoder of ours writes: ``[``, the names in
double quotes separated by single commas, ``]``, no whitespace, and no backslash
escape or control character inside a name, with exactly the expected number of names,
each already a task of the model. The bytes of such a list are the UTF-8 names, so a
byte-equal match is the name ``orjson`` would decode. Anything else (an escape,
spaces, an unknown name, a malformed list) gives None and the caller takes the
``orjson`` path, whose result is then the same as before; the lookup never decides
differently from it (``tests/service/test_task_lookup.py``).

The table follows :attr:`service.worker.state.ModelState.task_names`, which only grows:
:meth:`TaskLookup.indices` first appends the names added since its last call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

__all__ = ["TaskLookup"]

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_QUOTE, _COMMA, _OPEN, _CLOSE, _BACKSLASH = 34, 44, 91, 93, 92
_EMPTY = -1


@njit(cache=True, inline="always")
def _hash(data: np.ndarray, start: int, end: int) -> np.uint64:  # pragma: no cover - compiled
    """FNV-1a (64 bits) of ``data[start:end]``."""
    h = _FNV_OFFSET
    for p in range(start, end):
        h = (h ^ np.uint64(data[p])) * _FNV_PRIME
    return h


@njit(cache=True)
def _insert(
    table: np.ndarray, hashes: np.ndarray, blob: np.ndarray, offsets: np.ndarray, first: int
) -> None:  # pragma: no cover - compiled
    """Hash the names ``first..`` (``blob[offsets[t]:offsets[t + 1]]``) into ``hashes``
    and enter them in the open-addressing ``table`` (a power of two long, -1 = empty)."""
    mask = np.uint64(table.shape[0] - 1)
    for t in range(first, offsets.shape[0] - 1):
        h = _hash(blob, offsets[t], offsets[t + 1])
        hashes[t] = h
        slot = np.int64(h & mask)
        while table[slot] != _EMPTY:
            slot = np.int64((np.uint64(slot) + np.uint64(1)) & mask)
        table[slot] = t


@njit(cache=True)
def _resolve(
    raw: np.ndarray,
    n: int,
    table: np.ndarray,
    hashes: np.ndarray,
    blob: np.ndarray,
    offsets: np.ndarray,
    out: np.ndarray,
) -> bool:  # pragma: no cover - compiled
    """The task index of each of the ``n`` names of the JSON list ``raw`` into ``out``;
    False when ``raw`` is not in the plain form or names an unknown task (module
    docstring)."""
    size = raw.shape[0]
    if size < 2 or raw[0] != _OPEN or raw[size - 1] != _CLOSE:
        return False
    mask = np.uint64(table.shape[0] - 1)
    pos = 1
    for i in range(n):
        if i > 0:
            if raw[pos] != _COMMA:
                return False
            pos += 1
        if raw[pos] != _QUOTE:
            return False
        start = pos + 1
        end = start
        h = _FNV_OFFSET
        while end < size and raw[end] != _QUOTE:
            c = raw[end]
            if c == _BACKSLASH or c < 32:
                return False
            h = (h ^ np.uint64(c)) * _FNV_PRIME
            end += 1
        if end >= size - 1:  # no closing quote before the closing bracket
            return False
        length = end - start
        slot = np.int64(h & mask)
        found = _EMPTY
        while table[slot] != _EMPTY:
            t = table[slot]
            lo = offsets[t]
            if hashes[t] == h and offsets[t + 1] - lo == length:
                same = True
                for p in range(length):
                    if blob[lo + p] != raw[start + p]:
                        same = False
                        break
                if same:
                    found = t
                    break
            slot = np.int64((np.uint64(slot) + np.uint64(1)) & mask)
        if found == _EMPTY:
            return False
        out[i] = found
        pos = end + 1
    return pos == size - 1


class TaskLookup:
    """A model's task names, looked up from the raw JSON list of a batch entry."""

    def __init__(self) -> None:
        self._size = 0
        self._blob = np.zeros(64, dtype=np.uint8)
        self._offsets = np.zeros(1, dtype=np.int64)
        self._hashes = np.zeros(0, dtype=np.uint64)
        self._table = np.full(8, _EMPTY, dtype=np.int64)

    def __len__(self) -> int:
        return self._size

    def indices(self, raw: bytes, n: int, task_names: Sequence[str]) -> np.ndarray | None:
        """The task index of each of the ``n`` names in ``raw`` (the JSON list of a batch
        entry; ``task_names``: the model's tasks, index order, only ever appended to), or
        None where the caller must parse the list itself (module docstring)."""
        if len(task_names) != self._size:
            self._extend(task_names)
        if self._size == 0:
            return None
        out = np.empty(n, dtype=np.int64)
        if not _resolve(
            np.frombuffer(raw, dtype=np.uint8), n, self._table, self._hashes, self._blob,
            self._offsets, out,
        ):  # fmt: skip
            return None
        return out

    def _extend(self, task_names: Sequence[str]) -> None:
        """Append the names past the ones held (``task_names`` only grows)."""
        first = self._size
        added = [name.encode() for name in task_names[first:]]
        used = int(self._offsets[-1])
        need = used + sum(len(b) for b in added)
        if need > self._blob.shape[0]:
            blob = np.zeros(max(need, 2 * self._blob.shape[0]), dtype=np.uint8)
            blob[:used] = self._blob[:used]
            self._blob = blob
        ends = used + np.cumsum([len(b) for b in added], dtype=np.int64)
        for b, end in zip(added, ends.tolist(), strict=True):
            self._blob[end - len(b) : end] = np.frombuffer(b, dtype=np.uint8)
        self._offsets = np.concatenate([self._offsets, ends])
        self._hashes = np.concatenate([self._hashes, np.zeros(len(added), dtype=np.uint64)])
        self._size = len(task_names)
        if 2 * self._size > self._table.shape[0]:  # keep it at most half full: rehash all
            capacity = self._table.shape[0]
            while 2 * self._size > capacity:
                capacity *= 2
            self._table = np.full(capacity, _EMPTY, dtype=np.int64)
            first = 0
        _insert(self._table, self._hashes, self._blob, self._offsets, first)


def warm() -> None:
    """Compile (or load from numba's cache) the two passes, before a worker's first read."""
    lookup = TaskLookup()
    lookup.indices(b'["a","b"]', 2, ["a", "b"])
