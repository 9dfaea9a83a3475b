"""Round trips and rejections of the log entry codec (service.store.codec)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.store.codec import (
    BatchEvent,
    CodecError,
    Event,
    Label,
    MultiviewEvent,
    decode_entry,
    encode_batch,
    encode_event,
    encode_label,
    encode_multiview,
    format_y,
    parse_event_id,
    parse_x_json,
    split_event_id,
)


def _as_bytes(fields: dict[str, bytes | str]) -> dict[bytes, bytes]:
    """What a client with decode_responses=False reads back from Redis."""
    return {k.encode(): v if isinstance(v, bytes) else v.encode() for k, v in fields.items()}


finite32 = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, width=32)


@given(st.lists(finite32, min_size=1, max_size=20), st.booleans())
@settings(max_examples=60, deadline=None)
def test_dense_event_round_trip(values: list[float], binary: bool) -> None:
    fields = encode_event("t1", np.array(values), y=-1, ref="r-9", binary=binary)
    assert ("x32" in fields) is binary
    ev = decode_entry(b"5-1", _as_bytes(fields), n_features=len(values))
    assert isinstance(ev, Event)
    assert ev.id == "5-1"
    assert ev.task == "t1"
    assert ev.y == -1.0
    assert ev.ref == "r-9"
    assert isinstance(ev.x, np.ndarray)
    # float32 inputs survive both encodings exactly
    np.testing.assert_array_equal(ev.x.astype(np.float64), np.array(values, dtype=np.float32))


@pytest.mark.parametrize("binary", [False, True])
def test_sparse_event_round_trip(binary: bool) -> None:
    fields = encode_event("a", {"indices": [7, 2], "values": [0.5, -2.0]}, binary=binary)
    assert ("xi" in fields and "xv" in fields) is binary
    ev = decode_entry("1-0", _as_bytes(fields), n_features=10)
    assert isinstance(ev, Event)
    assert ev.y is None
    assert ev.ref is None
    idx, val = ev.x  # type: ignore[misc]
    assert idx.tolist() == [7, 2]
    assert val.tolist() == [0.5, -2.0]


def test_batch_round_trip_with_unlabelled_rows_and_refs() -> None:
    X = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    fields = encode_batch(["a", "b", "a"], X, y=[1, None, -1], refs=["x", None, "z"])
    b = decode_entry(b"9-3", _as_bytes(fields), n_features=4)
    assert isinstance(b, BatchEvent)
    assert b.n == 3
    assert b.tasks == ["a", "b", "a"]
    np.testing.assert_array_equal(b.X, X)
    assert b.y[0] == 1.0
    assert math.isnan(b.y[1])
    assert b.y[2] == -1.0
    assert b.refs == ["x", None, "z"]


def test_batch_with_one_task_and_no_labels() -> None:
    b = decode_entry("2-0", _as_bytes(encode_batch("only", np.ones((2, 3)))))
    assert isinstance(b, BatchEvent)
    assert b.tasks == ["only", "only"]
    assert np.isnan(b.y).all()
    assert b.refs is None


def test_label_round_trip_and_y_text() -> None:
    fields = encode_label("3-4/17", 1.0, annotator="ann")
    assert fields["y"] == "1"
    lab = decode_entry("8-0", fields)
    assert isinstance(lab, Label)
    assert (lab.event, lab.y, lab.annotator) == ("3-4/17", 1.0, "ann")
    assert format_y(-1) == "-1"
    assert format_y(0.25) == "0.25"
    assert float(format_y(1 / 3)) == 1 / 3


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("sparse_b", [False, True])
def test_multiview_round_trip(binary: bool, sparse_b: bool) -> None:
    views: dict[str, object] = {
        "a": np.array([0.5, -1.25]),
        "b": ([4, 0], [2.0, -0.5]) if sparse_b else np.array([0.0, 1.5, 0.0, 3.0, -2.0]),
        "c": np.array([1.0, 2.0, 3.0]),
    }
    fields = encode_multiview("b", views, y=-1, ref="r-3", binary=binary)
    assert fields["k"] == "v"
    if binary:  # all dense -> vx32; any sparse view -> every view sparse, exactly
        assert ("vxi" in fields) is sparse_b
        assert ("vx32" in fields) is not sparse_b
    else:
        assert "vx" in fields
    ev = decode_entry(b"4-2", _as_bytes(fields))
    assert isinstance(ev, MultiviewEvent)
    assert (ev.id, ev.task, ev.y, ev.ref) == ("4-2", "b", -1.0, "r-3")
    assert list(ev.views) == ["a", "b", "c"]
    dims = {"a": 2, "b": 5, "c": 3}
    for name, want in views.items():
        got = ev.views[name]
        dense = np.zeros(dims[name])
        if isinstance(got, tuple):
            dense[got[0]] = got[1]
        else:
            dense[:] = got
        if isinstance(want, tuple):
            expected = np.zeros(dims[name])
            expected[list(want[0])] = want[1]
        else:
            expected = np.asarray(want)
        np.testing.assert_array_equal(dense, expected, err_msg=name)


def test_multiview_without_label_and_encoder_checks() -> None:
    ev = decode_entry("1-0", _as_bytes(encode_multiview("a", {"a": [1.0]})))
    assert isinstance(ev, MultiviewEvent)
    assert ev.y is None
    assert ev.ref is None
    with pytest.raises(ValueError, match="one of its views"):
        encode_multiview("z", {"a": [1.0]})
    with pytest.raises(ValueError, match="at least one view"):
        encode_multiview("a", {})


def test_event_ids() -> None:
    assert split_event_id("12-3") == ("12-3", None)
    assert split_event_id("12-3/40") == ("12-3", 40)
    assert parse_event_id("12-3/40") == (12, 3, 40)
    assert parse_event_id("12-3") == (12, 3, -1)
    for bad in ("12", "a-b", "12-3/", "12-3/x", "-1-2"):
        with pytest.raises(ValueError, match="not an event id"):
            split_event_id(bad)


REJECTS = [
    ({b"k": b"z"}, "unknown entry kind"),
    ({b"task": b"a", b"x": b"[1,2]"}, "unknown entry kind"),
    ({b"k": b"e", b"x": b"[1,2,3]"}, "needs the field task"),
    ({b"k": b"e", b"task": b"a"}, "exactly one of the fields x"),
    ({b"k": b"e", b"task": b"a", b"x": b"[1,2,3]", b"x32": b"\0" * 12}, "exactly one"),
    ({b"k": b"e", b"task": b"a", b"x": b"[1,2"}, "not valid JSON"),
    ({b"k": b"e", b"task": b"a", b"x": b"[1,2]"}, "dimension 2, expected 3"),
    ({b"k": b"e", b"task": b"a", b"x": b'[1,"a",3]'}, "list of numbers"),
    ({b"k": b"e", b"task": b"a", b"x": b"[1,true,3]"}, "list of numbers"),
    ({b"k": b"e", b"task": b"a", b"x32": b"\0" * 7}, "multiple of 4"),
    ({b"k": b"e", b"task": b"a", b"x32": b"\0" * 8}, "dimension 2, expected 3"),
    (
        {b"k": b"e", b"task": b"a", b"x32": np.array([1, np.nan, 0], "<f4").tobytes()},
        "NaN",
    ),
    ({b"k": b"e", b"task": b"a", b"x": b"[1,2,3]", b"y": b"abc"}, "not a number"),
    ({b"k": b"e", b"task": b"a", b"x": b"[1,2,3]", b"y": b"nan"}, "finite"),
    ({b"k": b"e", b"task": b"a", b"x": b'{"indices":[5],"values":[1]}'}, "lie in"),
    # JSON carries float64; the log's features are float32 (what the API refuses too)
    ({b"k": b"e", b"task": b"a", b"x": b"[1,1e39,3]"}, "beyond the float32 range"),
    ({b"k": b"e", b"task": b"a", b"x": b'{"indices":[0],"values":[-1e200]}'}, "float32 range"),
    ({b"k": b"v", b"task": b"a", b"views": b'["a"]', b"vx": b"[[1e300]]"}, "float32 range"),
    ({b"k": b"e", b"task": b"a", b"x": b'{"indices":[0,1],"values":[1]}'}, "2 indices"),
    ({b"k": b"e", b"task": b"a", b"xi": b"\0\0\0\0"}, "needs xv"),
    ({b"k": b"e", b"task": b"", b"x": b"[1,2,3]"}, "must not be empty"),
    ({b"k": b"b", b"task": b"a", b"X32": b"\0" * 24}, "integer field n"),
    ({b"k": b"b", b"n": b"0", b"task": b"a", b"X32": b""}, "n >= 1"),
    ({b"k": b"b", b"n": b"2", b"task": b"a"}, "needs the field X32"),
    ({b"k": b"b", b"n": b"2", b"task": b"a", b"X32": b"\0" * 20}, "not n \\* d"),
    ({b"k": b"b", b"n": b"2", b"task": b"a", b"X32": b"\0" * 16}, "2 columns, expected 3"),
    ({b"k": b"b", b"n": b"2", b"X32": b"\0" * 24}, "exactly one of the fields task"),
    ({b"k": b"b", b"n": b"2", b"tasks": b'["a"]', b"X32": b"\0" * 24}, "list of 2"),
    ({b"k": b"b", b"n": b"2", b"task": b"a", b"X32": b"\0" * 24, b"y32": b"\0"}, "y32 has"),
    ({b"k": b"b", b"n": b"2", b"task": b"a", b"X32": b"\0" * 24, b"refs": b"[1,2]"}, "refs"),
    ({b"k": b"l", b"y": b"1"}, "fields event and y"),
    ({b"k": b"l", b"event": b"nope", b"y": b"1"}, "not an event id"),
    ({b"k": b"l", b"event": b"1-1", b"y": b"inf"}, "finite"),
    ({b"k": b"e", b"task": b"\xff\xfe", b"x": b"[1,2,3]"}, "UTF-8"),
    ({b"k": b"v", b"views": b'["a"]', b"vx": b"[[1]]"}, "fields task and views"),
    ({b"k": b"v", b"task": b"a", b"views": b'["a","a"]', b"vx": b"[[1],[2]]"}, "distinct"),
    ({b"k": b"v", b"task": b"a", b"views": b"[]", b"vx": b"[]"}, "distinct non-empty"),
    ({b"k": b"v", b"task": b"z", b"views": b'["a"]', b"vx": b"[[1]]"}, "not one of its views"),
    ({b"k": b"v", b"task": b"a", b"views": b'["a"]'}, "exactly one of the fields vx"),
    ({b"k": b"v", b"task": b"a", b"views": b'["a","b"]', b"vx": b"[[1]]"}, "list of 2 vectors"),
    ({b"k": b"v", b"task": b"a", b"views": b'["a"]', b"vx": b"[[1, null]]"}, "view 'a'"),
    ({b"k": b"v", b"task": b"a", b"views": b'["a"]', b"vx32": b"\0" * 4}, "need the field vlen"),
    (
        {b"k": b"v", b"task": b"a", b"views": b'["a"]', b"vx32": b"\0" * 4, b"vlen": b"\2\0"},
        "vlen has 2 bytes",
    ),
    (
        {
            b"k": b"v",
            b"task": b"a",
            b"views": b'["a"]',
            b"vx32": b"\0" * 4,
            b"vlen": np.array([2], "<i4").tobytes(),
        },
        "expected 8",
    ),
    (
        {
            b"k": b"v",
            b"task": b"a",
            b"views": b'["a"]',
            b"vx32": np.array([np.inf], "<f4").tobytes(),
            b"vlen": np.array([1], "<i4").tobytes(),
        },
        "NaN or infinite",
    ),
    (
        {
            b"k": b"v",
            b"task": b"a",
            b"views": b'["a"]',
            b"vxi": np.array([1, 1], "<i4").tobytes(),
            b"vxv": np.array([1, 2], "<f4").tobytes(),
            b"vlen": np.array([2], "<i4").tobytes(),
        },
        "unique and non-negative",
    ),
    (
        {
            b"k": b"v",
            b"task": b"a",
            b"views": b'["a"]',
            b"vxi": np.array([1], "<i4").tobytes(),
            b"vlen": np.array([1], "<i4").tobytes(),
        },
        "needs vxv",
    ),
]


@pytest.mark.parametrize(("fields", "reason"), REJECTS)
def test_decode_rejects_with_reason(fields: dict[bytes, bytes], reason: str) -> None:
    with pytest.raises(CodecError, match=reason):
        decode_entry(b"1-1", fields, n_features=3)


def test_parse_x_json_validates_like_the_api_needs() -> None:
    np.testing.assert_array_equal(parse_x_json([1, 2.5], 2), [1.0, 2.5])
    idx, val = parse_x_json({"indices": [1], "values": [3]}, 4)  # type: ignore[misc]
    assert idx.tolist() == [1]
    assert val.tolist() == [3.0]
    with pytest.raises(ValueError, match="unique"):
        parse_x_json({"indices": [1, 1], "values": [3, 4]}, 4)
    with pytest.raises(ValueError, match="expected 3"):
        parse_x_json([1, 2], 3)
    with pytest.raises(ValueError, match="must be a list"):
        parse_x_json("1,2", 2)
    with pytest.raises(ValueError, match="exactly the keys"):
        parse_x_json({"indices": [1]}, 2)
    largest = float(np.finfo(np.float32).max)
    assert parse_x_json([largest, -largest], 2).tolist() == [largest, -largest]
    with pytest.raises(ValueError, match="beyond the float32 range"):
        parse_x_json([np.nextafter(largest, np.inf), 0.0], 2)


def test_encoders_reject_bad_shapes() -> None:
    with pytest.raises(ValueError, match="2-D"):
        encode_batch("a", np.ones(3))
    with pytest.raises(ValueError, match="task names"):
        encode_batch(["a"], np.ones((2, 3)))
    with pytest.raises(ValueError, match="finite"):
        encode_event("a", [1.0], y=float("nan"))
    with pytest.raises(ValueError, match="not an event id"):
        encode_label("bad", 1)
