"""/dashboard, /annotate, their assets and data: GET /dashboard/data/{m},
GET /models/{m}/queries/pending, and the server-rendered SVG."""

from __future__ import annotations

import re

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

from service.api.pages import STATIC_DIR
from service.api.pages.svg import Series, curves_svg, heatmap_svg
from service.settings import Settings
from service.store import keys
from service.store.codec import encode_event
from service.worker.worker import Worker


def _ask(rb: redis.Redis, n: int, model: str = "default") -> list[str]:
    """Unlabelled events and a label request for each, as the worker writes them."""
    events = []
    for i in range(n):
        fields = encode_event("t1", [0.0, 0.0, 1.0], None, f"row-{i}", binary=True)
        event = rb.xadd(keys.log_key(model), fields).decode()  # type: ignore[arg-type]
        rb.xadd(
            keys.queries_key(model),
            {"event": event, "task": "t1", "score": str(0.5 - i), "ref": f"row-{i}", "ts": "1"},
        )
        events.append(event)
    return events


@pytest.mark.parametrize("path", ["/dashboard", "/annotate"])
def test_pages_load_only_their_own_assets(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    assets = re.findall(r'(?:src|href)="([^"]+)"', answer.text)
    local = [a for a in assets if a.startswith("/static/pages/")]
    assert len(local) >= 3
    for asset in local:
        assert client.get(asset).status_code == 200, asset
    assert all(not a.startswith(("http:", "https:", "//")) for a in assets)


def test_no_asset_refers_to_another_host() -> None:
    for path in STATIC_DIR.iterdir():
        assert not re.search(r"https?://", path.read_text()), path.name


def test_pending_lists_unanswered_requests_oldest_first(
    client: TestClient, rb: redis.Redis
) -> None:
    events = _ask(rb, 5)
    assert client.post("/label", json={"event_id": events[1], "y": 1}).status_code == 202
    body = client.get("/models/default/queries/pending").json()
    assert body["complete"] is True
    assert [r["event_id"] for r in body["requests"]] == [events[0], *events[2:]]
    first = body["requests"][0]
    assert (first["ref"], first["task"], first["score"], first["prediction"]) == (
        "row-0",
        "t1",
        0.5,
        1.0,
    )
    assert body["requests"][1]["prediction"] == -1.0  # score -1.5
    limited = client.get("/models/default/queries/pending?limit=2").json()
    assert [r["event_id"] for r in limited["requests"]] == [events[0], events[2]]
    assert limited["complete"] is False
    scanned = client.get("/models/default/queries/pending?scan=2").json()
    assert [r["event_id"] for r in scanned["requests"]] == [events[0]]
    # from a stream id on: the requests before it are not read
    later = client.get(f"/models/default/queries/pending?start={body['requests'][1]['id']}").json()
    assert [r["event_id"] for r in later["requests"]] == events[2:]
    assert later["scanned_to"] == body["requests"][-1]["id"]
    assert client.get("/models/default/queries/pending?start=nope").status_code == 422
    assert client.get("/models/nope/queries/pending").status_code == 404
    assert client.get("/models/default/queries/pending?limit=0").status_code == 422


def test_dashboard_data_has_the_pictures_and_the_figures(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    settings = api_settings.model_copy(update={"history_interval_s": 0.0})
    rng = np.random.default_rng(3)
    for _ in range(3):
        events = [
            {"task": t, "x": rng.normal(size=3).round(3).tolist(), "y": float(rng.choice([-1, 1]))}
            for t in ["a", "b", "c", "a"]
        ]
        client.post("/events", json={"events": events}).raise_for_status()
        Worker(settings, models=["default"]).run(until_idle=True, timeout=30)
    _ask(rb, 2)
    client.post("/label", json={"event_id": "1-0", "y": 1})  # 404: an unknown event
    body = client.get("/dashboard/data/default").json()
    assert body["failed"] is False
    assert body["model"]["counts"]["labels"] == 12
    assert [t["task"] for t in body["tasks"]] == ["a", "b", "c"]  # most labelled first
    rel = body["relations"]
    assert rel["tasks"] == ["a", "b", "c"]
    assert rel["kind"] and rel["meaning"]
    assert rel["svg"].count('class="cell"') == 9
    curves = body["curves"]
    assert curves["entries"] == 3
    assert curves["series"][0] == "all tasks" and set(curves["series"][1:]) == {"a", "b", "c"}
    assert 'class="curves"' in curves["svg"] and 'class="curve"' in curves["svg"]
    assert body["label_requests"] == {"issued": 0, "answered": 0, "pending": 0}
    assert body["log_lag"] == 2  # the two unapplied events _ask appended
    assert body["dead_letters"] == []
    assert body["worker_alive"] is False  # the worker ran and stopped: no heartbeat
    # the worker applies the two unlabelled events and asks for their labels (cmtl asks for all)
    Worker(settings, models=["default"]).run(until_idle=True, timeout=30)
    body = client.get("/dashboard/data/default").json()
    assert body["label_requests"] == {"issued": 2, "answered": 0, "pending": 2}
    assert body["log_lag"] == 0
    assert body["label_requests"] == body["model"]["label_requests"]
    rb.set(keys.heartbeat_key("default"), "1", ex=10)
    assert client.get("/dashboard/data/default").json()["worker_alive"] is True
    assert client.get("/dashboard/data/nope").status_code == 404


def test_heatmap_colours_follow_the_sign_and_names_are_escaped() -> None:
    svg = heatmap_svg(["<a>", "b&c"], np.array([[1.0, -0.5], [0.5, np.nan]]))
    assert "<a>" not in svg and "&lt;a&gt;" in svg and "b&amp;c" in svg
    fills = re.findall(r'class="cell"[^>]*fill="(#[0-9a-f]{6})"', svg)
    assert len(fills) == 4
    red, blue, pos, nan = fills[0], fills[1], fills[2], fills[3]
    assert int(red[1:3], 16) > int(red[5:7], 16)  # positive: red
    assert int(blue[5:7], 16) > int(blue[1:3], 16)  # negative: blue
    assert pos != "#ffffff" and nan == "#bbbbbb"
    with pytest.raises(ValueError, match="shape"):
        heatmap_svg(["a"], np.zeros((2, 2)))


def test_curves_are_scaled_into_the_plot_and_empty_charts_say_so() -> None:
    svg = curves_svg([Series("a", [0, 10], [0.0, 1.0])], "x", "y", (0.0, 1.0), 640, 300)
    (points,) = re.findall(r' points="([^"]+)"', svg)
    (x0, y0), (x1, y1) = [tuple(map(float, p.split(","))) for p in points.split()]
    assert (x0, x1) == (56.0, 640 - 150.0)  # plot area: left margin .. width - legend
    assert y0 == 300 - 40.0 and y1 == 12.0  # y = 0 at the bottom, 1 at the top
    assert "no history yet" in curves_svg([], "x", "y")
    single = curves_svg([Series("a", [3], [0.5])], "x", "y")
    assert 'data-points="1"' in single


def test_a_regression_model_is_shown_as_one(
    client: TestClient, rb: redis.Redis, api_settings: Settings
) -> None:
    body = {"learner": "ella", "params": {"base_learner": "linear"}, "n_features": 3}
    assert client.put("/models/r", json=body).status_code == 201
    events = [{"task": "a", "x": [1.0, 0.5, -1.0], "y": 12.5}, {"task": "a", "x": [0.1, 0.2, 0.3]}]
    client.post("/events", json={"model": "r", "events": events}).raise_for_status()
    Worker(api_settings.model_copy(update={"history_interval_s": 0.0}), models=["r"]).run(
        until_idle=True, timeout=30
    )
    data = client.get("/dashboard/data/r").json()
    assert data["kind"] == "regression"
    # no accuracy curve for real-valued labels: rMSE once the worker keeps error sums
    assert data["curves"]["metric"] in ("rMSE", "no error sums recorded")
    assert "online accuracy" not in data["curves"]["svg"]
    (request,) = client.get("/models/r/queries/pending").json()["requests"]
    assert request["prediction"] == request["score"]  # a real value, not a sign
