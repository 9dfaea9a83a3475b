"""Model configuration CRUD against a real Redis, validated by the learner registry."""

from __future__ import annotations

import pytest
import redis

from service.store import keys
from service.store.models import (
    ModelConfig,
    delete_model,
    get_model,
    initial_learner,
    list_models,
    put_model,
)


def test_put_get_list_and_idempotent_put(r: redis.Redis) -> None:
    seconds, micros = r.time()
    cfg = put_model(r, "spam", ModelConfig(learner="cmtl", n_features=4, params={"b": 2.0}))
    assert cfg.generation >= int(seconds) * 1_000_000 + int(micros)  # the incarnation id
    assert cfg.kind == "classification"
    assert cfg.created > 0
    assert list_models(r) == ["spam"]
    got = get_model(r, "spam")
    assert got == cfg
    again = put_model(r, "spam", ModelConfig(learner="cmtl", n_features=4, params={"b": 2.0}))
    assert again.generation == cfg.generation


def test_reconfigure_bumps_generation_and_clears_the_log(r: redis.Redis) -> None:
    first = put_model(r, "m", ModelConfig(learner="cmtl", n_features=4))
    r.xadd(keys.log_key("m"), {"k": "e"})
    r.hset(keys.labels_key("m"), "1-0", "1")
    r.xadd(keys.queries_key("m"), {"event": "1-0"})
    r.xadd(keys.alerts_key("m"), {"task": "a"})
    cfg = put_model(r, "m", ModelConfig(learner="ipl", n_features=4, tasks=["x", "y"]))
    assert cfg.generation > first.generation
    keep = (keys.log_key("m"), keys.labels_key("m"), keys.queries_key("m"), keys.alerts_key("m"))
    assert r.exists(*keep) == 0
    assert initial_learner(cfg).n_tasks == 2


@pytest.mark.parametrize(
    ("name", "cfg", "message"),
    [
        ("m", ModelConfig(learner="nope", n_features=3), "unknown learner"),
        ("m", ModelConfig(learner="cmtl", n_features=3, params={"zzz": 1}), "unknown parameter"),
        ("m", ModelConfig(learner="cmtl", n_features=3, params={"b": -1}), "invalid value"),
        ("m", ModelConfig(learner="cmtl", n_features=3, tasks=["a", "a"]), "unique"),
        ("{m}", ModelConfig(learner="cmtl", n_features=3), "invalid model name"),
        ("", ModelConfig(learner="cmtl", n_features=3), "invalid model name"),
    ],
)
def test_put_rejects_with_a_message(
    r: redis.Redis, name: str, cfg: ModelConfig, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        put_model(r, name, cfg)
    assert list_models(r) == []


def test_delete_removes_every_key(r: redis.Redis) -> None:
    put_model(r, "m", ModelConfig(learner="cmtl", n_features=2))
    r.xadd(keys.log_key("m"), {"k": "e"})
    r.xadd(keys.dead_key("m"), {"entry": "1-0"})
    assert delete_model(r, "m") is True
    assert r.keys("*") == []
    assert delete_model(r, "m") is False
    assert get_model(r, "m") is None
