"""A live service for the browser test: the API under uvicorn in this process and a
worker process, both on the session's embedded server; and a model with history,
relations and pending label requests to look at."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx
import numpy as np

from service.settings import Settings
from tests.api.test_core_queries import LiveApi
from tests.service.helpers import wait_until, worker_process

TASKS = ["alpha", "beta", "gamma", "delta", "epsilon"]
N_FEATURES = 4


@dataclass
class Live:
    """A running API (``base`` URL) with its HTTP client."""

    base: str
    http: httpx.Client

    def model(self, name: str = "default") -> dict[str, Any]:
        """``GET /models/{name}``."""
        answer = self.http.get(f"/models/{name}")
        answer.raise_for_status()
        return dict(answer.json())


@contextmanager
def live_service(settings: Settings) -> Iterator[Live]:
    """The API and one worker on ``settings.redis_url``, stopped on exit."""
    settings = settings.model_copy(
        update={
            "default_model": "default",
            "default_learner": "cmtl",
            "default_n_features": N_FEATURES,
            "default_tasks": TASKS,
            "history_interval_s": 0.0,
        }
    )
    worker = worker_process(
        str(settings.redis_url),
        snapshot_every_seconds=0.2,
        history_interval_s=0,
        block_ms=50,
        lease_ttl_ms=2000,
    )
    try:
        with LiveApi(settings) as api:
            base = f"http://127.0.0.1:{api.port}"
            with httpx.Client(base_url=base, timeout=10) as http:
                yield Live(base, http)
    finally:
        worker.terminate()
        worker.wait(30)


def seed(live: Live, rounds: int = 6, per_round: int = 40, unlabelled: int = 5) -> None:
    """Labelled events in ``rounds`` bursts (a history entry each), then ``unlabelled``
    predictions, which the worker turns into label requests."""
    rng = np.random.default_rng(7)
    w = rng.normal(size=(len(TASKS), N_FEATURES))
    w[1] = w[0] + 0.1 * rng.normal(size=N_FEATURES)  # two related tasks
    version = 0
    for _ in range(rounds):
        events = []
        for _ in range(per_round):
            t = int(rng.integers(len(TASKS)))
            x = rng.normal(size=N_FEATURES)
            y = 1.0 if float(w[t] @ x) >= 0 else -1.0
            events.append({"task": TASKS[t], "x": x.round(4).tolist(), "y": y})
        live.http.post("/events", json={"events": events}).raise_for_status()
        # one snapshot (and so one history entry) per burst
        assert wait_until(lambda v=version: live.model()["version"] > v, 30, 0.05)
        version = live.model()["version"]
    for i in range(unlabelled):
        x = rng.normal(size=N_FEATURES).round(4).tolist()
        answer = live.http.post("/predict", json={"task": TASKS[i % 3], "x": x, "ref": f"row-{i}"})
        answer.raise_for_status()
    assert wait_until(
        lambda: (
            len(live.http.get("/models/default/queries/pending").json()["requests"]) == unlabelled
        ),
        30,
        0.05,
    )
    # and the snapshot that holds them, so that what the pages show next comes from answers
    events = rounds * per_round + unlabelled
    assert wait_until(lambda: live.model()["counts"]["events"] == events, 30, 0.05)
