"""Model export and import through the API: a pickle-free, versioned, checksummed file; the
round trip is bit-identical; a damaged or foreign file is refused and changes nothing."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import redis
from fastapi.testclient import TestClient

from service.settings import Settings
from service.store.snapshot import read_snapshot
from service.worker import Worker

MODEL = {"learner": "omtl-logdet", "n_features": 3, "params": {"epoch_rounds": 5}, "seed": 7}


def _trained(client: TestClient, api_settings: Settings, name: str = "src") -> None:
    assert client.put(f"/models/{name}", json=MODEL).status_code == 201
    rng = np.random.default_rng(1)
    events = [
        {"task": f"t{i % 3}", "x": (rng.integers(-4, 4, 3) / 2).tolist(), "y": 1 if i % 2 else -1}
        for i in range(40)
    ]
    events += [{"task": "t1", "x": [0.5, 1, 0], "ref": "row-9"}]  # unlabelled: a label request
    assert client.post("/events", json={"model": name, "events": events}).status_code == 202
    Worker(api_settings, models=[name]).run(until_idle=True, timeout=30)


def _export(client: TestClient, name: str) -> bytes:
    r = client.get(f"/models/{name}/export")
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    return r.content


def test_export_import_round_trip_is_bit_identical(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    _trained(client, api_settings)
    data = _export(client, "src")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert sorted(zf.namelist()) == [
            "manifest.json",
            "snapshot/arrays.npz",
            "snapshot/header.json",
        ]
        manifest = json.loads(zf.read("manifest.json"))
        arrays = np.load(io.BytesIO(zf.read("snapshot/arrays.npz")), allow_pickle=False)
        assert all(arrays[k].dtype.kind in "biuf" for k in arrays.files)
    assert manifest["format"] == 1 and manifest["name"] == "src"
    assert manifest["config"]["learner"] == "omtl-logdet"

    r = client.post("/models/import", params={"as": "copy"}, content=data)
    assert r.status_code == 201, r.text
    info = r.json()
    assert info["name"] == "copy" and info["tasks"] == ["t0", "t1", "t2"]
    assert info["generation"] != client.get("/models/src").json()["generation"]

    a, b = read_snapshot(rb, "src"), read_snapshot(rb, "copy")
    assert a is not None and b is not None
    sa, sb = a.learner.state_dict(), b.learner.state_dict()
    assert sa.keys() == sb.keys()
    for key, value in sa.items():
        if isinstance(value, np.ndarray):
            assert value.dtype == sb[key].dtype and value.tobytes() == sb[key].tobytes(), key
        else:
            assert value == sb[key], key
    for name, counts in a.counters.items():
        assert np.array_equal(counts, b.counters[name])
    assert a.last_id == b.last_id
    # the copy's export holds the same members, byte for byte (the manifest names the copy)
    with zipfile.ZipFile(io.BytesIO(_export(client, "copy"))) as zf:
        again = {n: zf.read(n) for n in zf.namelist()}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for member in ("snapshot/header.json", "snapshot/arrays.npz"):
            assert again[member] == zf.read(member), member
    assert json.loads(again["manifest.json"]) == {**manifest, "name": "copy"}
    # and both predict the same
    body = {"task": "t2", "x": [1.0, -0.5, 2.0], "learn": False}
    p1 = client.post("/predict", json={**body, "model": "src"}).json()
    p2 = client.post("/predict", json={**body, "model": "copy"}).json()
    assert (p1["score"], p1["label"]) == (p2["score"], p2["label"])
    # deleted and imported under its own name, the model exports to the very same file
    assert client.delete("/models/src").status_code == 204
    assert client.post("/models/import", content=data).json()["name"] == "src"
    assert _export(client, "src") == data


def test_the_imported_model_learns_on_from_the_exported_state(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    _trained(client, api_settings)
    data = _export(client, "src")
    assert client.post("/models/import", params={"as": "copy"}, content=data).status_code == 201
    more = [{"task": "t0", "x": [1, 0, 1], "y": -1}, {"task": "t3", "x": [0, 1, 1], "y": 1}]
    for name in ("src", "copy"):
        assert client.post("/events", json={"model": name, "events": more}).status_code == 202
    Worker(api_settings, models=["src", "copy"]).run(until_idle=True, timeout=30)
    a, b = read_snapshot(rb, "src"), read_snapshot(rb, "copy")
    assert a is not None and b is not None
    assert a.task_names == b.task_names == ["t0", "t1", "t2", "t3"]
    for key, value in a.learner.state_dict().items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, b.learner.state_dict()[key]), key


def test_damaged_foreign_and_conflicting_files_are_refused(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    _trained(client, api_settings)
    data = _export(client, "src")
    before = sorted(rb.keys("*"))

    # a flipped byte in the arrays: the checksum catches it
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    arrays = bytearray(members["snapshot/arrays.npz"])
    arrays[-100] ^= 0xFF
    damaged = io.BytesIO()
    with zipfile.ZipFile(damaged, "w") as zf:
        for n, content in members.items():
            zf.writestr(n, bytes(arrays) if n == "snapshot/arrays.npz" else content)
    r = client.post("/models/import", params={"as": "x"}, content=damaged.getvalue())
    assert r.status_code == 422 and "checksum" in r.json()["detail"]

    # another format version
    manifest = json.loads(members["manifest.json"])
    newer = io.BytesIO()
    with zipfile.ZipFile(newer, "w") as zf:
        for n, content in members.items():
            if n == "manifest.json":
                content = json.dumps({**manifest, "format": 2}).encode()
            zf.writestr(n, content)
    r = client.post("/models/import", params={"as": "x"}, content=newer.getvalue())
    assert r.status_code == 422 and "format 2" in r.json()["detail"]

    # not a zip at all (a pickle, say)
    r = client.post("/models/import", params={"as": "x"}, content=b"\x80\x04\x95 not an export")
    assert r.status_code == 422 and "zip" in r.json()["detail"]

    # the name is taken
    r = client.post("/models/import", content=data)
    assert r.status_code == 409 and "exists" in r.json()["detail"]
    assert sorted(rb.keys("*")) == before

    assert client.get("/models/nope/export").status_code == 404
