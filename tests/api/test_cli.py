"""``omtl replay`` and ``omtl annotate`` against the real app, Redis and worker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import redis
import scipy.sparse as sp
from fastapi.testclient import TestClient

from evaluation.dataset import Dataset
from service.cli.annotate_cmd import annotate
from service.cli.client import ApiCallError, sse_messages
from service.cli.replay_cmd import ensure_model, event_json, replay
from service.settings import Settings
from service.worker import Worker


class AsgiApi:
    """The commands' :class:`service.cli.client.Api` over the in-process test client."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        r = self.client.request(method, path, json=body)
        return r.status_code, (r.json() if r.content else None)

    def sse(self, path: str, params: dict[str, Any]) -> Iterator[str]:
        given = {k: v for k, v in params.items() if v is not None}
        yield from self.client.get(path, params=given).text.splitlines()


def _dataset(n: int = 40) -> Dataset:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 4))
    task = np.arange(n) % 2
    y = np.where(X[:, 0] * np.where(task == 0, 1, -1) >= 0, 1.0, -1.0)
    return Dataset("toy", X, y, task.astype(np.int64), ["left", "right"])


def test_sse_parser_handles_comments_multiline_and_no_final_blank() -> None:
    lines = [": hello", "", "id: 1-0", "event: label_request", "data: {", "data: }", "", "data: x"]
    assert list(sse_messages(lines)) == [
        {"id": "1-0", "event": "label_request", "data": "{\n}"},
        {"data": "x"},
    ]


def test_event_json_dense_sparse_and_labels() -> None:
    ds = _dataset(4)
    event = event_json(ds, 2, labelled=True)
    assert event == {"task": "left", "x": ds.X[2].tolist(), "ref": "2", "y": ds.y[2]}
    sparse = Dataset(
        "s", sp.csr_matrix(np.array([[0.0, 2.0], [1.0, 0.0]])), ds.y[:2], ds.task[:2], ["a", "b"]
    )
    assert event_json(sparse, 0, labelled=False) == {
        "task": "a",
        "x": {"indices": [1], "values": [2.0]},
        "ref": "0",
    }


def test_replay_then_annotate_teaches_the_model(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    api = AsgiApi(client)
    ds = _dataset()
    ensure_model(api, "toy", ds, "cmtl", {})
    info = client.get("/models/toy").json()
    assert (info["n_features"], info["tasks"]) == (4, ["left", "right"])

    stats = replay(api, ds, "toy", batch=16, labelled=0.25)
    assert (stats.events, stats.requests) == (40, 3)
    assert 0 < stats.labelled < 40
    Worker(api_settings, models=["toy"]).run(until_idle=True, timeout=30)
    after_replay = {t["task"]: t for t in client.get("/models/toy/tasks").json()}
    assert sum(t["events"] for t in after_replay.values()) == 40
    labels_before = sum(t["labels"] for t in after_replay.values())
    assert labels_before == stats.labelled

    # cmtl is passive: every unlabelled event is a label request.
    unlabelled = 40 - stats.labelled
    answered = annotate(api, ds, "toy", after="0-0", limit=unlabelled, timeout=10)
    assert (answered.requests, answered.accepted, answered.skipped) == (unlabelled, unlabelled, 0)
    Worker(api_settings, models=["toy"]).run(until_idle=True, timeout=30)
    tasks = client.get("/models/toy/tasks").json()
    assert sum(t["labels"] for t in tasks) == 40

    again = annotate(api, ds, "toy", after="0-0", limit=unlabelled, timeout=10)
    assert again.duplicate == unlabelled and again.accepted == 0


def test_ensure_model_refuses_another_dimension(client: TestClient) -> None:
    with pytest.raises(ApiCallError, match="n_features=3, the dataset has 4"):
        ensure_model(AsgiApi(client), "default", _dataset(), "cmtl", {})
