"""The dashboard and annotator pages: their static assets and the SVG charts.

The assets in ``static/`` are package data (no CDN); the API serves them under
``/static/pages``. See ``docs/architecture.md``, "The dashboard and annotator pages".
"""

from __future__ import annotations

from pathlib import Path

from fastapi.responses import HTMLResponse

__all__ = ["STATIC_DIR", "page", "page_response"]

#: The directory of the pages' HTML, JavaScript and CSS.
STATIC_DIR = Path(__file__).parent / "static"


def page(name: str) -> str:
    """The HTML of page ``name`` (``dashboard`` or ``annotate``)."""
    return (STATIC_DIR / f"{name}.html").read_text(encoding="utf-8")


def page_response(name: str) -> HTMLResponse:
    """Page ``name`` as an HTML answer that browsers revalidate (the page polls the API)."""
    return HTMLResponse(page(name), headers={"Cache-Control": "no-cache"})
