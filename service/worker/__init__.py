"""The worker: leases, deterministic application of a model's log, snapshots.

Drive it from a script with ``Worker(settings, models=[...]).run(until_idle=True)``,
which returns a :class:`RunResult`; ``python -m service.worker`` (or
``omtl worker``) runs it as a process that stops cleanly on SIGTERM.
"""

from __future__ import annotations

from service.worker.worker import RunResult, Worker

__all__ = ["RunResult", "Worker"]
