"""Server-rendered SVG charts of the dashboard: a heatmap and line curves.

Rendered here rather than by a JavaScript plotting library: the pictures are
small (a heatmap of at most a few dozen tasks, a handful of curves of at most a
few hundred points), an SVG string costs less than shipping a multi-megabyte
plotting bundle, needs no CDN and no extra package, works in any browser, and is
tested in Python like the rest of the service. See ``docs/architecture.md``,
"The dashboard and annotator pages".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

import numpy as np

__all__ = ["PALETTE", "Series", "curves_svg", "heatmap_svg"]

#: Line colours of the curves (colour-blind safe, Okabe-Ito).
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
)


def _num(v: float) -> str:
    """A coordinate with two decimals (no exponent)."""
    return f"{v:.2f}"


def _label(v: float) -> str:
    """A tick or legend value, short."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _colour(v: float, scale: float) -> str:
    """Diverging colour of ``v`` on [-scale, scale]: blue (negative), white, red (positive)."""
    if not math.isfinite(v):
        return "#bbbbbb"
    t = 0.0 if scale <= 0 else max(-1.0, min(1.0, v / scale))
    if t >= 0:  # white -> red (#b2182b)
        r, g, b = 255 + t * (178 - 255), 255 + t * (24 - 255), 255 + t * (43 - 255)
    else:  # white -> blue (#2166ac)
        s = -t
        r, g, b = 255 + s * (33 - 255), 255 + s * (102 - 255), 255 + s * (172 - 255)
    return f"#{round(r):02x}{round(g):02x}{round(b):02x}"


def heatmap_svg(tasks: Sequence[str], matrix: np.ndarray, title: str = "") -> str:
    """An SVG heatmap of the square ``matrix`` with rows and columns named by ``tasks``.

    Colours are symmetric around 0 (scale: the largest absolute off-diagonal value,
    else the largest absolute value), so a sign reads the same in every model.
    """
    m = np.asarray(matrix, dtype=np.float64)
    n = len(tasks)
    if m.shape != (n, n):
        raise ValueError(f"matrix of shape {m.shape} for {n} tasks")
    finite = np.isfinite(m)
    off = finite & ~np.eye(n, dtype=bool)
    pool = m[off] if off.any() else m[finite]
    scale = float(np.abs(pool).max()) if pool.size else 1.0
    cell = max(8.0, min(28.0, 520.0 / max(n, 1)))
    names = [t if len(t) <= 18 else t[:17] + "…" for t in tasks]
    margin = 12 + 6.5 * max((len(t) for t in names), default=1)
    top = margin + (18 if title else 0)
    width = margin + n * cell + 90
    height = top + n * cell + 10
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" width="{_num(width)}" '
        f'height="{_num(height)}" viewBox="0 0 {_num(width)} {_num(height)}" '
        f'data-tasks="{n}" data-scale="{scale:.6g}" font-family="sans-serif" font-size="11">'
    ]
    if title:
        out.append(f'<text x="4" y="13" font-weight="bold">{escape(title)}</text>')
    font = min(11.0, cell * 0.8)
    for i, name in enumerate(names):
        y = top + (i + 0.5) * cell
        out.append(
            f'<text class="row-label" x="{_num(margin - 4)}" y="{_num(y)}" text-anchor="end" '
            f'dominant-baseline="middle" font-size="{_num(font)}">{escape(name)}</text>'
        )
        x = margin + (i + 0.5) * cell
        out.append(
            f'<text class="col-label" transform="translate({_num(x)},{_num(top - 4)}) rotate(-60)" '
            f'font-size="{_num(font)}">{escape(name)}</text>'
        )
    for i in range(n):
        for j in range(n):
            v = float(m[i, j])
            out.append(
                f'<rect class="cell" x="{_num(margin + j * cell)}" y="{_num(top + i * cell)}" '
                f'width="{_num(cell)}" height="{_num(cell)}" fill="{_colour(v, scale)}">'
                f"<title>{escape(tasks[i])} × {escape(tasks[j])}: {v:.4g}</title></rect>"
            )
    # the colour legend: -scale .. 0 .. +scale
    lx = margin + n * cell + 20
    steps = 20
    bar = max(60.0, n * cell)
    for s in range(steps):
        v = scale * (1 - 2 * s / (steps - 1))
        out.append(
            f'<rect x="{_num(lx)}" y="{_num(top + s * bar / steps)}" width="14" '
            f'height="{_num(bar / steps + 0.5)}" fill="{_colour(v, scale)}"/>'
        )
    for frac, v in ((0.0, scale), (0.5, 0.0), (1.0, -scale)):
        out.append(
            f'<text x="{_num(lx + 18)}" y="{_num(top + frac * bar)}" '
            f'dominant-baseline="middle">{escape(_label(v))}</text>'
        )
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True)
class Series:
    """One curve: its name and its points."""

    name: str
    xs: Sequence[float]
    ys: Sequence[float]


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    step = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if raw <= mult * step:
            step *= mult
            break
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def curves_svg(
    series: Sequence[Series],
    x_label: str,
    y_label: str,
    y_range: tuple[float, float] | None = None,
    width: int = 640,
    height: int = 300,
) -> str:
    """An SVG line chart of ``series`` with axes, ticks and a legend.

    ``y_range`` fixes the y axis (e.g. 0..1 for accuracy); by default it spans the data.
    A chart without points says so in its middle.
    """
    shown = [s for s in series if len(s.xs) > 0]
    left, right, top, bottom = 56.0, 150.0, 12.0, 40.0
    pw, ph = width - left - right, height - top - bottom
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="curves" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" data-series="{len(shown)}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect x="{_num(left)}" y="{_num(top)}" width="{_num(pw)}" height="{_num(ph)}" '
        'fill="#fafafa" stroke="#999"/>',
    ]
    if not shown:
        out.append(
            f'<text x="{_num(left + pw / 2)}" y="{_num(top + ph / 2)}" text-anchor="middle" '
            'fill="#666">no history yet</text></svg>'
        )
        return "".join(out)
    xs_all = [float(x) for s in shown for x in s.xs]
    ys_all = [float(y) for s in shown for y in s.ys if math.isfinite(y)]
    x0, x1 = min(xs_all), max(xs_all)
    if x1 <= x0:
        x1 = x0 + 1.0
    if y_range is not None:
        y0, y1 = y_range
    else:
        y0, y1 = (min(ys_all), max(ys_all)) if ys_all else (0.0, 1.0)
        if y1 <= y0:
            y0, y1 = y0 - 0.5, y1 + 0.5

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * ph

    for t in _ticks(x0, x1):
        out.append(
            f'<line x1="{_num(px(t))}" x2="{_num(px(t))}" y1="{_num(top + ph)}" '
            f'y2="{_num(top + ph + 4)}" stroke="#666"/>'
            f'<text x="{_num(px(t))}" y="{_num(top + ph + 16)}" text-anchor="middle">'
            f"{escape(_label(t))}</text>"
        )
    for t in _ticks(y0, y1):
        out.append(
            f'<line x1="{_num(left)}" x2="{_num(left + pw)}" y1="{_num(py(t))}" '
            f'y2="{_num(py(t))}" stroke="#e4e4e4"/>'
            f'<text x="{_num(left - 6)}" y="{_num(py(t))}" text-anchor="end" '
            f'dominant-baseline="middle">{escape(_label(t))}</text>'
        )
    out.append(
        f'<text x="{_num(left + pw / 2)}" y="{height - 6}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
        f'<text transform="translate(14,{_num(top + ph / 2)}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    for i, s in enumerate(shown):
        colour = PALETTE[i % len(PALETTE)]
        points = [
            (px(float(x)), py(min(max(float(y), y0), y1)))
            for x, y in zip(s.xs, s.ys)
            if math.isfinite(float(y))
        ]
        if len(points) == 1:
            cx, cy = points[0]
            out.append(
                f'<circle class="curve" data-points="1" cx="{_num(cx)}" cy="{_num(cy)}" r="3" '
                f'fill="{colour}"><title>{escape(s.name)}</title></circle>'
            )
        elif points:
            path = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
            out.append(
                f'<polyline class="curve" data-points="{len(points)}" fill="none" '
                f'stroke="{colour}" stroke-width="2" points="{path}">'
                f"<title>{escape(s.name)}</title></polyline>"
            )
        ly = top + 8 + i * 16
        name = s.name if len(s.name) <= 18 else s.name[:17] + "…"
        out.append(
            f'<line x1="{_num(left + pw + 10)}" x2="{_num(left + pw + 28)}" y1="{_num(ly)}" '
            f'y2="{_num(ly)}" stroke="{colour}" stroke-width="3"/>'
            f'<text x="{_num(left + pw + 32)}" y="{_num(ly)}" dominant-baseline="middle">'
            f"{escape(name)}</text>"
        )
    out.append("</svg>")
    return "".join(out)
