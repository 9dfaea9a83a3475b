"""Progress bars of the long-running commands (``replay``, ``annotate``, ``evaluate``).

A thin layer over tqdm: bars go to stderr, only when stderr is a terminal
(``disable=None``), so pipes, logs and tests see the commands' plain output.
``OMTL_PROGRESS=0`` turns them off, ``OMTL_PROGRESS=1`` forces them on
(docs/architecture.md, "The command line").
"""

from __future__ import annotations

import os
import sys
from typing import Any

from tqdm import tqdm

__all__ = ["Progress", "progress"]

Progress = tqdm


def _disable() -> bool | None:
    setting = os.environ.get("OMTL_PROGRESS", "").strip().lower()
    if setting in ("0", "false", "no", "off"):
        return True
    if setting in ("1", "true", "yes", "on"):
        return False
    return None  # tqdm: shown only on a terminal


def progress(total: int | None, desc: str, unit: str, **options: Any) -> tqdm[Any]:
    """A progress bar of ``total`` ``unit`` (None: a counter without an end)."""
    settings: dict[str, Any] = {
        "file": sys.stderr,
        "disable": _disable(),
        "dynamic_ncols": True,
    }
    return tqdm(total=total, desc=desc, unit=unit, **{**settings, **options})
