"""A small terminal progress bar for long evaluations (drawn on a TTY only)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    """``bar(done, total)`` redraws at most every ``interval`` seconds; :meth:`close` ends the line.

    Nothing is drawn when ``stream`` is not a terminal, or before ``delay``
    seconds have passed (short evaluations stay quiet).
    """

    def __init__(
        self,
        label: str,
        stream: TextIO | None = None,
        *,
        interval: float = 0.2,
        delay: float = 1.0,
        width: int = 30,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.interval = interval
        self.width = width
        self.start = time.monotonic()
        self.delay = delay
        self.last = 0.0
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.delay or (now - self.last < self.interval and done < total):
            return
        self.last = now
        frac = min(1.0, done / total) if total else 1.0
        filled = int(frac * self.width)
        elapsed = now - self.start
        eta = elapsed * (1 - frac) / frac if frac > 0 else 0.0
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(
            f"\r{self.label} [{bar}] {100 * frac:5.1f}%  {elapsed:5.0f}s  eta {eta:4.0f}s"
        )
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        """Finish the bar's line (if one was drawn)."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False
