"""The service on a real 3-primary Redis Cluster (embedded servers, ``redis+cluster://``):
slots, the API's slot-routed fast path with redirections, the full loop through the app,
crash determinism, lease takeover and the spread of models over workers."""

from __future__ import annotations

import asyncio

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.settings import Settings
from service.store import keys
from service.store.cluster import ClusterResp, key_slot
from service.store.models import ModelConfig, delete_model, list_models, put_model
from service.store.resp import pack
from service.store.scripts import APPEND_EVENTS
from tests.api.test_loop import test_predict_label_request_label_new_version_new_prediction
from tests.service import test_assignment, test_crash_determinism, test_worker


def test_every_key_of_a_model_is_on_its_slot_and_models_spread_over_the_nodes(
    crb: redis.Redis,
) -> None:
    per_model = [
        keys.config_key,
        keys.log_key,
        keys.snapshot_key,
        keys.progress_key,
        keys.labels_key,
        keys.lease_key,
        keys.cuts_key,
        keys.queries_key,
    ]
    nodes = set()
    for i in range(30):
        name = f"model-{i}"
        slots = {int(crb.cluster_keyslot(key(name))) for key in per_model}  # type: ignore[attr-defined]
        assert slots == {key_slot(keys.config_key(name))}  # the server agrees with our CRC16
        nodes.add(crb.get_node_from_key(keys.config_key(name)).name)  # type: ignore[attr-defined]
    assert len(nodes) == 3


def test_models_are_created_and_deleted_across_slots(crb: redis.Redis) -> None:
    """The registry and a model's keys live on different slots: no cross-slot transaction."""
    config = ModelConfig(learner="cmtl", n_features=2, tasks=["a"])
    for name in ("a", "b", "c"):
        put_model(crb, name, config)
    assert list_models(crb) == ["a", "b", "c"]
    assert delete_model(crb, "b")
    assert list_models(crb) == ["a", "c"]
    assert crb.exists(keys.config_key("b")) == 0


def test_the_fast_path_routes_by_slot_and_follows_moved(crb: redis.Redis, cluster_url: str) -> None:
    """APPEND_EVENTS through ClusterResp lands on each model's node; a wrong slot map is
    corrected by the MOVED reply (the queued path and the awaited path)."""
    config = ModelConfig(learner="cmtl", n_features=2, tasks=["a"])
    names = [f"m{i}" for i in range(6)]
    generation = {name: str(put_model(crb, name, config).generation) for name in names}

    async def scenario() -> list[int]:
        fast = ClusterResp(cluster_url, timeout=10)
        try:
            await fast.call("PING")  # loads the slot map, connects every primary
            nodes = sorted({a for a in fast._slots if a is not None})
            assert len(nodes) == 3
            # point every model's slot at a wrong node: MOVED sets it right
            for name in names:
                slot = key_slot(keys.config_key(name))
                right = fast._slots[slot]
                fast._slots[slot] = next(n for n in nodes if n != right)
            lengths = []
            for name in names:
                script_keys = [
                    keys.config_key(name),
                    keys.log_key(name),
                    keys.snapshot_key(name),
                    keys.progress_key(name),
                ]
                args = [generation[name], "1000", "1", "2", "k", "x"]
                reply = await fast.evalsha(
                    APPEND_EVENTS.sha, APPEND_EVENTS.source, script_keys, args
                )
                assert int(reply[0]) == 1
                # queued path (as the group commit sends), after the map was corrected
                packed = pack("EVALSHA", APPEND_EVENTS.sha, 4, *script_keys, *args)
                future = fast.send_packed(packed, now=True)
                assert future is not None
                assert int((await future)[0]) == 1
                lengths.append(len(reply))
            # a wrong map for the queued path: the redirection is followed behind the future
            slot = key_slot(keys.config_key("m0"))
            right = fast._slots[slot]
            fast._slots[slot] = next(n for n in nodes if n != right)
            packed = pack(
                "EVALSHA",
                APPEND_EVENTS.sha,
                4,
                keys.config_key("m0"),
                keys.log_key("m0"),
                keys.snapshot_key("m0"),
                keys.progress_key("m0"),
                generation["m0"],
                "1000",
                "0",
            )
            future = fast.send_packed(packed, now=True)
            assert future is not None
            assert int((await future)[0]) == 1
            assert fast._slots[slot] == right
            return lengths
        finally:
            fast.close()

    assert asyncio.run(scenario()) == [3] * 6
    for name in names:
        assert crb.xlen(keys.log_key(name)) == 2


def test_the_full_loop_through_the_app_on_the_cluster(
    crb: redis.Redis, cluster_settings: Settings
) -> None:
    api_settings = cluster_settings.model_copy(
        update={"default_model": "default", "default_learner": "cmtl", "default_n_features": 3}
    )
    with TestClient(create_app(api_settings)) as client:
        test_predict_label_request_label_new_version_new_prediction(client, crb, api_settings)


@pytest.mark.slow
def test_crash_determinism_on_the_cluster(
    crb: redis.Redis, cluster_url: str, cluster_settings: Settings
) -> None:
    test_crash_determinism.test_sigkill_and_restart_gives_the_state_of_an_uninterrupted_run(
        crb, cluster_url, cluster_settings
    )


def test_lease_takeover_on_the_cluster(
    crb: redis.Redis, cluster_url: str, cluster_settings: Settings
) -> None:
    test_worker.test_a_second_worker_takes_over_when_the_lease_expires(
        crb, cluster_url, cluster_settings
    )


def test_workers_spread_models_and_rebalance_on_the_cluster(
    crb: redis.Redis, cluster_settings: Settings
) -> None:
    test_assignment.test_joining_and_leaving_rebalances_without_applying_twice(
        crb, cluster_settings
    )


@pytest.mark.slow
def test_a_killed_workers_models_are_taken_over_on_the_cluster(
    crb: redis.Redis, cluster_url: str, cluster_settings: Settings
) -> None:
    test_assignment.test_a_killed_workers_models_are_taken_over_after_its_lease(
        crb, cluster_url, cluster_settings
    )
