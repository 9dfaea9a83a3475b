"""The compiled look-up of a batch entry's task names (service/worker/task_lookup.py).

Whatever bytes it is given, the look-up either declines (None: the worker then parses
the list with orjson, as it always did) or gives exactly the task indices that parsing
the list as JSON and looking each name up would give; on the plain lists our encoders
write it never declines. It follows a task list that grows, and never reads past the
bytes it is given.
"""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.worker.task_lookup import TaskLookup

#: Names with the characters a JSON encoder escapes or a naive split would trip on.
ODD = ["naïve", "日本語", "a b", "x,y", 'q"uote', "back\\slash", "tab\there", "", "[", '","']
NAMES = [f"t{k}" for k in range(40)] + ODD


def _expected(raw: bytes, n: int, names: list[str]) -> list[int] | None:
    """What the orjson path makes of ``raw``: the indices, or None (not a list of n known names)."""
    try:
        parsed = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if type(parsed) is not list or len(parsed) != n:
        return None
    try:
        return [names.index(p) for p in parsed]
    except (ValueError, TypeError):
        return None


def _plain(name: str) -> bool:
    """Whether orjson writes ``name`` without an escape (no quote, backslash or control)."""
    return not any(c in name for c in '"\\') and all(ord(c) >= 32 for c in name)


@settings(max_examples=300, deadline=None)
@given(
    picks=st.lists(st.integers(0, len(NAMES) - 1), min_size=1, max_size=60),
    form=st.sampled_from(["orjson", "ascii", "spaced"]),
)
def test_a_list_resolves_to_what_json_gives_or_declines(picks: list[int], form: str) -> None:
    names = [NAMES[i] for i in picks]
    if form == "orjson":
        raw = orjson.dumps(names)
    elif form == "ascii":  # \\u escapes for every non-ASCII character
        raw = json.dumps(names).encode()
    else:
        raw = json.dumps(names, ensure_ascii=False, separators=(", ", ": ")).encode()
    lookup = TaskLookup()
    got = lookup.indices(raw, len(names), NAMES)
    if got is not None:
        assert got.dtype == np.int64
        assert got.tolist() == picks
    plain = all(_plain(n) for n in names)
    if form == "orjson" and plain:
        assert got is not None  # our encoders' form: never declined
    if form == "spaced" and len(names) > 1:
        assert got is None


@settings(max_examples=500, deadline=None)
@given(raw=st.binary(max_size=40), n=st.integers(1, 5))
def test_arbitrary_bytes_never_resolve_to_anything_else(raw: bytes, n: int) -> None:
    got = TaskLookup().indices(raw, n, NAMES)
    if got is not None:
        assert got.tolist() == _expected(raw, n, NAMES)


@settings(max_examples=300, deadline=None)
@given(
    picks=st.lists(st.integers(0, 39), min_size=1, max_size=8),
    cut=st.integers(0, 200),
    junk=st.binary(max_size=3),
)
def test_damaged_lists_decline_or_agree_with_json(picks: list[int], cut: int, junk: bytes) -> None:
    raw = orjson.dumps([NAMES[i] for i in picks])
    cut = cut % (len(raw) + 1)
    damaged = raw[:cut] + junk + raw[cut + len(junk) :]
    for n in {len(picks), len(picks) - 1, len(picks) + 1} - {0}:
        got = TaskLookup().indices(damaged, n, NAMES)
        if got is not None:
            assert got.tolist() == _expected(damaged, n, NAMES)


@pytest.mark.parametrize(
    "raw",
    [b"", b"[", b"[]", b'["t1"', b'["t1",]', b'["t1""t2"]', b"[t1]", b'["t1"],', b'["t1","t2"]'],
)
def test_malformed_or_miscounted_lists_decline(raw: bytes) -> None:
    assert TaskLookup().indices(raw, 1, NAMES) is None


def test_the_table_follows_a_growing_task_list() -> None:
    """Names appended between calls are found (the table rehashes as it fills), names not
    appended yet are not."""
    names: list[str] = []
    lookup = TaskLookup()
    rng = np.random.default_rng(0)
    for size in (1, 3, 4, 5, 9, 17, 100, 1000, 1001):
        while len(names) < size:
            names.append(f"task-{len(names)}-{'x' * int(rng.integers(0, 20))}")
        picks = rng.integers(0, size, 50).tolist()
        got = lookup.indices(orjson.dumps([names[i] for i in picks]), 50, names)
        assert got is not None and got.tolist() == picks
        assert len(lookup) == size
        assert lookup.indices(orjson.dumps(["task-not-yet"]), 1, names) is None


def test_an_empty_model_declines() -> None:
    assert TaskLookup().indices(b'["t1"]', 1, []) is None
