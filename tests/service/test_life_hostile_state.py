"""Crafted or corrupt state in Redis never crash-loops the worker.

Each case below writes one hostile thing into model ``bad`` (a snapshot header,
a configuration field, an ``.npz`` member) while model ``good`` has ordinary
events. The worker serves ``good``, marks ``bad`` failed with the reason (the
``omtl:{m}:failed`` record, the ``omtl_model_failed`` gauge, the log), and
loads it again once the state is repaired, after ``OMTL_MODEL_RETRY_S``
(docs/architecture.md, "Leases and fencing", Failures).
"""

from __future__ import annotations

import io
import json
import threading
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import redis

from service import metrics
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event
from service.store.failures import read_failed
from service.store.models import ModelConfig, initial_snapshot, put_model
from service.store.snapshot import encode, read_snapshot
from service.worker import Worker
from tests.service.helpers import wait_until

Craft = Callable[[redis.Redis], None]


def _good_parts(r: redis.Redis) -> tuple[dict[str, Any], bytes]:
    """Create model ``bad`` (cmtl, d = 2); its valid snapshot header (parsed) and arrays."""
    stored = put_model(r, "bad", ModelConfig(learner="cmtl", n_features=2))
    header, arrays = encode(initial_snapshot("bad", stored))
    return json.loads(header), arrays


def _snapshot(r: redis.Redis, header: object, arrays: bytes) -> None:
    text = header if isinstance(header, str) else json.dumps(header)
    r.hset(keys.snapshot_key("bad"), mapping={"version": 1, "header": text, "arrays": arrays})


def _member(name: str, npy_header: dict[str, object], data: bytes) -> bytes:
    """An .npz with one deflated member whose .npy header is ``npy_header``."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, npy_header)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name + ".npy", head.getvalue() + data)
    return buf.getvalue()


def header_is_a_list(r: redis.Redis) -> None:
    _, arrays = _good_parts(r)
    _snapshot(r, [1], arrays)


def header_without_scalars(r: redis.Redis) -> None:
    header, arrays = _good_parts(r)
    del header["scalars"]
    _snapshot(r, header, arrays)


def header_not_json(r: redis.Redis) -> None:
    _, arrays = _good_parts(r)
    _snapshot(r, "{", arrays)


def config_without_learner(r: redis.Redis) -> None:
    _good_parts(r)
    r.delete(keys.snapshot_key("bad"))
    r.hdel(keys.config_key("bad"), "learner")


def config_is_not_a_hash(r: redis.Redis) -> None:
    _good_parts(r)
    r.delete(keys.config_key("bad"))
    r.set(keys.config_key("bad"), "oops")


def config_over_the_budget(r: redis.Redis) -> None:
    _good_parts(r)
    r.hset(keys.config_key("bad"), "n_features", str(10**9))


def member_declaring_2_gb(r: redis.Redis) -> None:
    header, _ = _good_parts(r)
    spec = {"descr": "<f8", "fortran_order": False, "shape": (268_435_456,)}
    _snapshot(r, header, _member("learner.state.V_", spec, b"\0" * 4096))


def member_of_objects(r: redis.Redis) -> None:
    header, _ = _good_parts(r)
    spec = {"descr": "|O", "fortran_order": False, "shape": (1,)}
    _snapshot(r, header, _member("learner.state.V_", spec, b"\x80\x04N."))


def shape_of_another_dimension(r: redis.Redis) -> None:
    header, arrays = _good_parts(r)
    header["scalars"]["n_features"] = 7
    _snapshot(r, header, arrays)


def a_billion_tasks(r: redis.Redis) -> None:
    header, arrays = _good_parts(r)
    header["scalars"]["n_tasks"] = 10**9
    _snapshot(r, header, arrays)


def weights_of_the_wrong_shape(r: redis.Redis) -> None:
    header, _ = _good_parts(r)
    buf = io.BytesIO()
    np.savez(buf, **{"learner.state.V_": np.zeros((1, 5)), "learner.state.s_": np.zeros(2)})
    _snapshot(r, header, buf.getvalue())


def truncated_archive(r: redis.Redis) -> None:
    header, arrays = _good_parts(r)
    _snapshot(r, header, arrays[: len(arrays) // 2])


CASES: dict[Craft, str] = {
    header_is_a_list: "JSON list, not an object",
    header_without_scalars: "'scalars' is missing",
    header_not_json: "not JSON",
    config_without_learner: "no field 'learner'",
    config_is_not_a_hash: "WRONGTYPE",
    config_over_the_budget: "over the budget",
    member_declaring_2_gb: "over the model's budget",
    member_of_objects: "dtype object",
    shape_of_another_dimension: "7 features, the model has 2",
    a_billion_tasks: "over the maximum",
    weights_of_the_wrong_shape: "snapshot cannot be loaded",
    truncated_archive: "snapshot cannot be loaded",
}


@pytest.mark.parametrize("craft", list(CASES), ids=lambda c: c.__name__)
def test_hostile_state_marks_the_model_failed_and_the_others_go_on(
    craft: Craft, rb: redis.Redis, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    put_model(rb, "good", ModelConfig(learner="ipl", n_features=2))
    rb.xadd(keys.log_key("good"), encode_event("a", [1.0, 2.0], y=1, binary=True))
    craft(rb)
    result = Worker(settings, worker_id="w-hostile").run(until_idle=True, timeout=30)
    assert result.models == ["good"]
    assert result.events == 1
    failure = read_failed(rb, "bad")
    assert failure is not None and failure.worker == "w-hostile"
    assert CASES[craft] in failure.reason
    assert "cannot load model 'bad'" in caplog.text and CASES[craft] in caplog.text
    assert metrics.MODEL_FAILED.labels("bad")._value.get() == 1.0
    assert rb.exists(keys.lease_key("bad")) == 0


def test_a_repaired_model_is_loaded_again_after_the_retry_period(
    rb: redis.Redis, settings: Settings
) -> None:
    header_without_scalars(rb)
    rb.xadd(keys.log_key("bad"), encode_event("a", [1.0, 2.0], y=1, binary=True))
    quick = settings.model_copy(update={"model_retry_s": 0.3})
    worker = Worker(quick, ["bad"], "w-retry")
    first = worker.run(until_idle=True, timeout=5)
    assert first.models == [] and read_failed(rb, "bad") is not None
    rb.delete(keys.snapshot_key("bad"))  # the operator removes the bad snapshot
    worker.stopping = False
    second = worker.run(until_idle=False, timeout=1.5)
    assert second.models == ["bad"] and second.events == 1
    assert read_failed(rb, "bad") is None
    assert metrics.MODEL_FAILED.labels("bad")._value.get() == 0.0
    snap = read_snapshot(rb, "bad")
    assert snap is not None and snap.learner.name == "cmtl"


def test_a_generation_made_invalid_while_the_model_is_owned_fails_it_without_a_crash(
    rb: redis.Redis, settings: Settings
) -> None:
    put_model(rb, "good", ModelConfig(learner="ipl", n_features=2))
    put_model(rb, "bad", ModelConfig(learner="ipl", n_features=2))
    worker = Worker(settings, worker_id="w-owned")
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        assert wait_until(lambda: set(worker.owned) == {"good", "bad"}, timeout=20)
        rb.hset(keys.config_key("bad"), "generation", "not-a-number")
        rb.xadd(keys.log_key("bad"), encode_event("a", [1.0, 2.0], y=1, binary=True))
        assert wait_until(lambda: read_failed(rb, "bad") is not None, timeout=20)
        failure = read_failed(rb, "bad")
        assert failure is not None and "generation" in failure.reason
        rb.xadd(keys.log_key("good"), encode_event("a", [1.0, 2.0], y=1, binary=True))

        def applied() -> bool:
            snap = read_snapshot(rb, "good")
            return snap is not None and int(snap.counters["events"].sum()) == 1

        assert wait_until(applied, timeout=20)
        assert thread.is_alive() and "bad" not in worker.owned
    finally:
        worker.stop()
        thread.join(timeout=30)
