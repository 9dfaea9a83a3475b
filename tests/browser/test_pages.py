"""The dashboard, the annotator page and the API docs in a real browser (Debian's
chromium driven by playwright), against a live service with no network beyond it.

Skipped, with the reason, when chromium or playwright is not installed (CI installs
both: ``.ci/run``). Screenshots (dashboard.png, annotate.png, docs.png) go to a
temporary directory, or to the directory in ``OMTL_SCREENSHOTS`` when it is set
(``OMTL_SCREENSHOTS=bench/results`` refreshes the committed ones).
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from service.settings import Settings
from tests.browser.live import Live, live_service, seed
from tests.service.helpers import wait_until

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
    pytest.skip(
        "Debian's chromium is not installed (apt-get install chromium; .ci/run does)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (the test extra)"
)
Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed (matplotlib's)")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]


@pytest.fixture
def live(settings: Settings, rb: Any) -> Iterator[Live]:
    """A live service with a seeded default model."""
    with live_service(settings) as service:
        seed(service)
        yield service


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where the screenshots go (module docstring)."""
    chosen = os.environ.get("OMTL_SCREENSHOTS")
    out = Path(chosen) if chosen else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The system chromium, headless, launched by playwright (never a downloaded browser);
    one for the module (1-1.7 s a launch), each test in contexts of its own (``Offline``)."""
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield chromium
        chromium.close()


class Offline:
    """A page whose requests may only reach the live service: anything else is refused
    and recorded (no CDN, no network)."""

    def __init__(self, browser: Any, base: str) -> None:
        self.base = base
        self.refused: list[str] = []
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.route("**/*", self._route)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if url.startswith(self.base) or url.startswith("data:"):
            route.continue_()
        else:
            self.refused.append(url)
            route.abort()

    def page(self, path: str) -> Any:
        page = self.context.new_page()
        page.goto(self.base + path)
        return page


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def _shot(page: Any, selector: str, tries: int = 5) -> np.ndarray:
    """The pixels of a screenshot of the element ``selector``. The dashboard redraws an SVG
    whose data changed (the worker may still be applying the seed), so the element found
    may be replaced before it is shot: it is then found again."""
    for attempt in range(tries):
        try:
            return _pixels(page.locator(selector).screenshot())
        except sync_api.Error as exc:
            if "not attached" not in str(exc) or attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


def _has_colour(pixels: np.ndarray, hex_colour: str, tolerance: int = 30) -> int:
    """How many pixels are within ``tolerance`` of ``hex_colour`` in every channel."""
    rgb = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    return int((np.abs(pixels - rgb).max(axis=2) <= tolerance).sum())


def test_dashboard_shows_the_heatmap_and_the_curves_with_data(
    browser: Any, live: Live, shots: Path
) -> None:
    offline = Offline(browser, live.base)
    page = offline.page("/dashboard")
    page.wait_for_selector("body[data-loaded='1']")
    page.wait_for_selector("svg.heatmap rect.cell")
    # DOM: a 5 x 5 heatmap named by task, and curves of several points
    assert page.locator("svg.heatmap rect.cell").count() == 25
    labels = page.locator("svg.heatmap text.row-label").all_text_contents()
    assert sorted(labels) == sorted(["alpha", "beta", "gamma", "delta", "epsilon"])
    assert page.locator("#relation-kind").text_content()
    points = [
        int(p)
        for p in page.locator("svg.curves .curve").evaluate_all(
            "els => els.map(e => e.dataset.points)"
        )
    ]
    assert len(points) >= 2 and max(points) >= 3, points
    assert page.locator("#card-pending .v").text_content() == "5"
    assert page.locator("#card-worker .v").text_content() == "live"
    # pixels: the heatmap is coloured (not blank, not one colour), the first curve is drawn
    heat = _shot(page, "svg.heatmap")
    assert len({tuple(p) for p in heat.reshape(-1, 3)[::7].tolist()}) > 10
    assert (np.abs(heat - 255).max(axis=2) > 40).mean() > 0.2
    curves = _shot(page, "svg.curves")
    assert _has_colour(curves, "#0072B2") > 100
    page.screenshot(path=str(shots / "dashboard.png"), full_page=True)
    assert offline.refused == []


def test_docs_render_offline(browser: Any, live: Live, shots: Path) -> None:
    offline = Offline(browser, live.base)
    page = offline.page("/docs")
    page.wait_for_selector(".swagger-ui .opblock")
    assert page.locator(".swagger-ui .opblock").count() >= 10
    assert "/predict" in page.locator(".swagger-ui").inner_text()
    pixels = _pixels(page.screenshot())
    assert _has_colour(pixels, "#49cc90", 20) > 200  # Swagger UI's green POST blocks
    page.screenshot(path=str(shots / "docs.png"), full_page=False)
    # "Try it out" on /predict sends the documented example as it is, and gets 200
    block = page.locator(".opblock-post", has=page.locator("[data-path='/predict']")).first
    block.locator(".opblock-summary").first.click()
    block.locator("button.try-out__btn").click()
    block.locator("button.execute").click()
    status = block.locator(".live-responses-table tbody .response-col_status").first
    status.wait_for()
    assert status.inner_text().strip() == "200"
    redoc = offline.page("/redoc")
    redoc.wait_for_selector("h1")
    assert "omtl" in redoc.locator("h1").first.text_content()
    assert offline.refused == []


def test_three_requests_answered_by_clicking_leave_every_page_and_move_the_model(
    browser: Any, live: Live, shots: Path
) -> None:
    offline = Offline(browser, live.base)
    page = offline.page("/annotate")
    other = offline.page("/annotate")  # a second page of the same annotator
    # another annotator's browser: nothing shared with the first one but the service, so its
    # rows can only go through the label_answered messages of GET /queries?answers=true
    elsewhere = Offline(browser, live.base)
    third = elsewhere.page("/annotate")
    for p in (page, other, third):
        p.wait_for_selector("body[data-loaded='1']")
        p.wait_for_function("document.querySelectorAll('#requests .req').length === 5")
    before = live.model()
    refs = page.locator("#requests .req code").all_text_contents()
    assert "row-0" in refs  # the producer's ref is shown, oldest request first
    for left in (4, 3, 2):
        page.locator("#requests .req").first.locator("button.pos").click()
        page.wait_for_function(f"document.querySelectorAll('#requests .req').length === {left}")
    for p in (other, third):  # well before the 10 s re-read of the pending list
        p.wait_for_function(
            "document.querySelectorAll('#requests .req').length === 2", timeout=5000
        )
    page.screenshot(path=str(shots / "annotate.png"), full_page=True)

    def applied(n: int) -> bool:
        now = live.model()
        return now["version"] > before["version"] and now["counts"]["labels"] == (
            before["counts"]["labels"] + n
        )

    assert wait_until(lambda: applied(3), 30, 0.1)
    pending = live.http.get("/models/default/queries/pending").json()["requests"]
    assert [r["ref"] for r in pending] == ["row-3", "row-4"]
    # one key answers the highlighted (oldest) request
    page.keyboard.press("-")
    for p in (page, other, third):
        p.wait_for_function("document.querySelectorAll('#requests .req').length === 1")
    assert wait_until(lambda: applied(4), 30, 0.1)
    pending = live.http.get("/models/default/queries/pending").json()["requests"]
    assert [r["ref"] for r in pending] == ["row-4"]
    assert offline.refused == [] and elsewhere.refused == []
