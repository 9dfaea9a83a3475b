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
from tests.api import test_loop
from tests.service import test_assignment, test_crash_determinism, test_worker
from tests.service.helpers import wait_until

# One xdist worker runs the whole module: the session's three-node cluster (2.3-2.4 s to start) is
# started once, not once on each worker.
pytestmark = pytest.mark.xdist_group("cluster")


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
        test_loop.test_predict_label_request_label_new_version_new_prediction(
            client, crb, api_settings
        )


@pytest.mark.slow
def test_crash_determinism_on_the_cluster(
    crb: redis.Redis, cluster_url: str, cluster_settings: Settings
) -> None:
    # a longer lease than the suite's 1 s: the cluster client's renewals take more CPU, and
    # a lapse on a loaded machine would make the uninterrupted run reload (and count twice)
    steady = cluster_settings.model_copy(update={"lease_ttl_ms": 5000})
    test_crash_determinism.test_sigkill_and_restart_gives_the_state_of_an_uninterrupted_run(
        crb, cluster_url, steady
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


def _migrate_slot(cluster_url: str, slot: int) -> None:
    """Move ``slot`` with its keys to another primary (IMPORTING/MIGRATING, MIGRATE, NODE)."""
    from service.store.cluster import ClusterUrl

    nodes = [redis.Redis(host=h, port=p) for h, p in ClusterUrl(cluster_url).nodes]
    try:
        ids = [n.execute_command("CLUSTER", "MYID").decode() for n in nodes]
        owner = next(
            i for i, n in enumerate(nodes) if n.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
        )
        source, target = nodes[owner], nodes[(owner + 1) % len(nodes)]
        target_id, source_id = ids[(owner + 1) % len(nodes)], ids[owner]
        target.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        source.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        while moving := source.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
            host = target.connection_pool.connection_kwargs["host"]
            port = target.connection_pool.connection_kwargs["port"]
            source.execute_command("MIGRATE", host, port, "", 0, 5000, "KEYS", *moving)
        for n in nodes:
            n.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
    finally:
        for n in nodes:
            n.close()


def test_a_model_whose_slot_moves_keeps_being_served(
    crb: redis.Redis, cluster_url: str, cluster_settings: Settings
) -> None:
    """Resharding under load: the model's slot moves to another primary while a worker
    serves it and the API appends to it; both follow the redirection, every event is
    applied once."""
    from service.store.snapshot import read_snapshot
    from tests.service.test_assignment import all_applied, running

    api_settings = cluster_settings.model_copy(update={"default_model": ""})
    with TestClient(create_app(api_settings)) as client, running(cluster_settings, "w-mig"):
        spec = {"learner": "cmtl", "n_features": 2, "tasks": ["a"]}
        assert client.put("/models/mig", json=spec).status_code == 201

        def send(n: int) -> None:
            events = [{"task": "a", "x": [1.0, float(i % 3)], "y": 1} for i in range(n)]
            assert (
                client.post("/events", json={"model": "mig", "events": events}).status_code == 202
            )

        send(20)
        assert wait_until(lambda: all_applied(crb, ["mig"]), timeout=30)
        before = crb.get_node_from_key(keys.log_key("mig")).name  # type: ignore[attr-defined]
        _migrate_slot(cluster_url, key_slot(keys.log_key("mig")))
        send(30)  # the API's slot map is stale: MOVED
        assert wait_until(lambda: all_applied(crb, ["mig"]), timeout=30)
        crb.nodes_manager.initialize()  # type: ignore[attr-defined]
        assert crb.get_node_from_key(keys.log_key("mig")).name != before  # type: ignore[attr-defined]
    snap = read_snapshot(crb, "mig")
    assert snap is not None and snap.totals["events"] == 50


def test_cluster_urls_name_the_nodes_and_credentials() -> None:
    from service.store.cluster import ClusterUrl, first_key, is_cluster_url

    url = ClusterUrl("redis+cluster://app:p%40ss@10.0.0.1:6379,[::1]:7000/")
    assert url.nodes == [("10.0.0.1", 6379), ("::1", 7000)]
    assert (url.username, url.password) == ("app", "p@ss")
    assert url.node_url("10.0.0.1", 6379) == "redis://app:p%40ss@10.0.0.1:6379/0"
    assert is_cluster_url("redis+cluster://h:1") and not is_cluster_url("redis://h:1/0")
    with pytest.raises(ValueError, match="host:port"):
        ClusterUrl("redis+cluster://justahost")
    assert first_key(pack("EVALSHA", "f" * 40, 2, "k1", "k2", "arg")) == b"k1"
    assert first_key(pack("HGET", "omtl:{m}:config", "generation")) == b"omtl:{m}:config"
