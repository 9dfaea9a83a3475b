"""Cells of the throughput tables: rates, failures and learners too slow to finish an event."""

from __future__ import annotations

from typing import Any

__all__ = ["cell", "rate"]


def rate(value: float) -> str:
    if value != value:  # NaN
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f} M"
    if value >= 1e3:
        return f"{value / 1e3:.1f} k"
    return f"{value:.0f}"


def cell(entry: dict[str, Any] | None, key: str = "per_sec") -> str:
    if entry is None:
        return "-"
    if "error" in entry:
        return "error"
    if "skipped" in entry:
        return "n/a"
    if not entry.get("events"):
        return f"< 1 event in {entry.get('seconds', 0.0):.1f} s"
    return rate(entry[key])
