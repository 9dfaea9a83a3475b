"""``python -m service.worker [--model M ...] [--until-idle]``: run one worker process.

Settings come from the environment (``REDIS_URL``, ``OMTL_*``). SIGTERM and
SIGINT drain the read in hand, snapshot and release the leases. With
``--until-idle`` the process exits once its models' logs are fully applied and
prints the run's counts as JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict

import learners
from service.settings import Settings

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run a worker with the environment's settings; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m service.worker")
    parser.add_argument("--model", action="append", help="serve only this model (repeatable)")
    parser.add_argument("--until-idle", action="store_true", help="exit once the logs are applied")
    parser.add_argument("--timeout", type=float, default=None, help="give up after this many s")
    parser.add_argument("--metrics-port", type=int, default=None, help="serve /metrics here")
    parser.add_argument("--worker-id", default=None, help="the id written into leases")
    args = parser.parse_args(argv)
    settings = Settings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    from service.worker import Worker

    log = logging.getLogger("omtl.worker")

    port = settings.worker_metrics_port if args.metrics_port is None else args.metrics_port
    if port:
        from prometheus_client import start_http_server

        try:
            start_http_server(port, addr=settings.api_host)
        except OSError as exc:
            log.warning("metrics port %d unavailable (%s); running without it", port, exc)
    start = time.perf_counter()
    # before the first read and the first lease: no batch pays a compilation (each model's
    # learner loads its kernels as the worker takes the model: Worker._load)
    compiled = learners.ensure_kernels()
    log.info(
        "learner kernels ready in %.2f s (%s)",
        time.perf_counter() - start,
        "compiled" if compiled else "in the cache",
    )
    worker = Worker(settings, models=args.model, worker_id=args.worker_id)
    worker.install_signal_handlers()
    result = worker.run(until_idle=args.until_idle, timeout=args.timeout)
    worker.close()
    if args.until_idle:
        out = asdict(result)
        out["events_per_second"] = result.events_per_second
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
