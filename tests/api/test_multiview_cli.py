"""``omtl replay`` and ``omtl annotate`` with a multiview dataset, and ``omtl evaluate
--protocol multiview`` from the command line.

Replay sends the rounds as multiview rounds to a model it creates with the
dataset's tasks and dimensions; the oracle answers the label requests; the
worker's online mistakes then equal those of the offline ``multiview``
protocol's learner on the same rounds in the same order.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

import learners
from evaluation.multiview import load_multiview
from service.cli import main as omtl
from service.cli.annotate_cmd import annotate
from service.cli.client import ApiCallError
from service.cli.replay_cmd import ensure_multiview_model, replay, round_json
from service.settings import Settings
from service.store.snapshot import read_snapshot
from service.worker import Worker
from tests.api.test_cli import AsgiApi

SPEC = "multiview-tasks:n=120,K=3,d_min=2,d_max=5,seed=4"


def test_round_json_sends_every_view_with_its_task() -> None:
    ds = load_multiview(SPEC)
    event = round_json(ds, 7, labelled=True)
    assert event["task"] == ds.view_names[int(ds.task[7])]
    assert event["ref"] == "7"
    assert event["y"] == float(ds.y[7])
    assert [len(event["views"][n]) for n in ds.view_names] == ds.view_dims


def test_replay_and_annotate_a_multiview_dataset(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    api = AsgiApi(client)
    ds = load_multiview(SPEC)
    assert not ds.uniform
    data = ensure_multiview_model(api, "mv", ds, "mmperc", {})
    info = client.get("/models/mv").json()
    assert info["task_dims"] == dict(zip(ds.view_names, ds.view_dims, strict=True))
    stats = replay(api, data, "mv", batch=25, labelled=0.5)
    assert (stats.events, stats.requests) == (120, 5)
    Worker(api_settings, models=["mv"]).run(until_idle=True, timeout=30)
    unlabelled = 120 - stats.labelled
    answered = annotate(api, ds, "mv", after="0-0", limit=unlabelled, timeout=10)
    assert (answered.requests, answered.accepted) == (unlabelled, unlabelled)
    Worker(api_settings, models=["mv"]).run(until_idle=True, timeout=30)
    snap = read_snapshot(rb, "mv")
    assert snap is not None
    assert int(snap.counters["labels"].sum()) == 120

    # the same learner offline: labelled rounds in order, then the late labels in order
    with_label = np.random.default_rng(0).random(ds.n) < 0.5
    ref = learners.make("mmperc", n_features=max(ds.view_dims), n_tasks=3, task_dims=ds.view_dims)
    views32 = [v.astype(np.float32).astype(np.float64) for v in ds.views]
    mistakes = 0
    for r in [*np.flatnonzero(with_label), *np.flatnonzero(~with_label)]:
        s = ref.score_and_learn_views([v[r] for v in views32], ds.y[r], int(ds.task[r]))
        mistakes += int((s >= 0) != (ds.y[r] > 0))
    assert int(snap.counters["mistakes"].sum()) == mistakes
    np.testing.assert_array_equal(
        snap.learner.state_dict()["state.v_"], ref.state_dict()["state.v_"]
    )

    # a model of another learner kind, or of other dimensions, is refused
    with pytest.raises(ApiCallError, match="takes no multiview rounds"):
        ensure_multiview_model(api, "default", ds, None, {})
    other = load_multiview("multiview-tasks:n=10,K=3,d_min=6,d_max=8,seed=1")
    with pytest.raises(ApiCallError, match="task dimensions"):
        ensure_multiview_model(api, "mv", other, None, {})


def test_matrix_pnorm_gets_padded_views(client: TestClient) -> None:
    ds = load_multiview(SPEC)
    data = ensure_multiview_model(AsgiApi(client), "mp", ds, "matrix-pnorm", {})
    d = max(ds.view_dims)
    assert data.view_dims == [d, d, d]
    assert client.get("/models/mp").json()["task_dims"] == dict.fromkeys(ds.view_names, d)
    assert replay(AsgiApi(client), data, "mp", batch=40).events == 120


def test_omtl_evaluate_runs_the_multiview_protocol(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "doc.json"
    code = omtl(
        [
            "evaluate",
            "multiview-shared:n=300,K=4,d=5,seed=2",
            "--learner",
            "matrix-pnorm",
            "--protocol",
            "multiview",
            "--runs",
            "2",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["protocol"] == "multiview"
    assert doc["runs"] == 2
    assert 0.0 <= doc["metrics"]["mistake_rate_mean"] < 0.5
    assert "matrix-pnorm" in capsys.readouterr().out
    # a multiview set with another protocol, or the protocol on another set: exit 2 with why
    assert omtl(["evaluate", "multiview-shared:n=50", "--learner", "mmperc", "--runs", "1"]) == 0
    assert "protocol multiview" in capsys.readouterr().out  # the multiview sets' default
    assert (
        omtl(["evaluate", "multiview-shared:n=50", "--learner", "mmperc", "--protocol", "online"])
        == 2
    )
    assert "use --protocol multiview" in capsys.readouterr().err
    assert (
        omtl(["evaluate", "synthetic-saha", "--learner", "mmperc", "--protocol", "multiview"]) == 2
    )
    assert "runs on the multiview datasets" in capsys.readouterr().err
    assert omtl(["datasets"]) == 0
    assert "landmine-views" in capsys.readouterr().out
