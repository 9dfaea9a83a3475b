"""The online multitask learning service: Redis Streams worker, HTTP API, metrics and CLI."""

from __future__ import annotations

__version__ = "0.1.0"
