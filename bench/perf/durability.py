"""What ``appendfsync always`` costs ``POST /predict`` (run by command, not in CI).

Two embedded servers run side by side, one with ``appendfsync always`` (the
default: an acknowledged event survives a ``kill -9`` of the server) and one
with ``everysec`` (up to about a second of acknowledged events can be lost),
each with its own API process (uvicorn, one worker). The load runs on the two
alternate, so both see the same machine; each cell is the run with the median
requests/second, with the CPU the API and its server spent per request
(docs/architecture.md, "Durability of acknowledged writes").

Usage: ``python -m bench.perf.durability [--seconds S] [--reps R] [--out DIR]``;
writes ``bench/results/durability.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import orjson

from bench import RESULTS
from bench.perf.e2e_http import LoadResult, load, serve
from bench.perf.throughput_report import machine
from service.embedded_redis import EmbeddedRedis

D = 100
POLICIES = ("always", "everysec")


def _median(runs: list[LoadResult]) -> LoadResult:
    return sorted(runs, key=lambda r: r.requests_per_sec)[len(runs) // 2]


def measure(
    seconds: float, reps: int, connections: tuple[int, ...]
) -> dict[tuple[str, int], LoadResult]:
    """Median load run per (policy, connections)."""
    body = orjson.dumps({"task": "t1", "x": np.linspace(-1, 1, D).round(4).tolist()})
    runs: dict[tuple[str, int], list[LoadResult]] = {}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        apis = {}
        for policy in POLICIES:
            server = stack.enter_context(EmbeddedRedis(Path(tmp) / policy, appendfsync=policy))
            env = {
                "REDIS_URL": server.url,
                "OMTL_DEFAULT_MODEL": "default",
                "OMTL_DEFAULT_N_FEATURES": str(D),
                "OMTL_LOG_LEVEL": "warning",
                "OMTL_MAX_BACKLOG": str(10**9),  # no worker drains the log here
            }
            port, pid = stack.enter_context(serve("service.api.app:create_app", env))
            apis[policy] = (port, [pid, int(server.pid or 0)])
        for _ in range(reps):
            for c in connections:
                for policy in POLICIES:
                    port, pids = apis[policy]
                    runs.setdefault((policy, c), []).append(load(port, body, c, seconds, pids))
    return {key: _median(value) for key, value in runs.items()}


def report(results: dict[tuple[str, int], LoadResult], load_avg: tuple[float, float]) -> str:
    info = machine()
    lines = [
        "# What `appendfsync always` costs `POST /predict`",
        "",
        "`python -m bench.perf.durability`: two embedded servers side by side, `appendfsync always` "
        "(the default; an acknowledged event survives `kill -9` of the server) and `everysec` "
        "(up to about one second of acknowledged events can be lost), each with its own API "
        "process; the load runs alternate and each cell is the run with the median requests/s.",
        "",
        f"{info['date']} on {info['cpu']}, {info['cores']} cores, {info['os']}, Python "
        f"{info['python']}. Load average (1 min) at the start and the end: {load_avg[0]:.1f} and "
        f"{load_avg[1]:.1f}.",
        "",
        "| connections | fsync | req/s | p50 | p99 | CPU / request (API + server) | always / everysec |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for c in sorted({c for _, c in results}):
        base = results[("everysec", c)].requests_per_sec
        for policy in POLICIES:
            r = results[(policy, c)]
            ratio = f"{r.requests_per_sec / base:.0%}" if policy == "always" else ""
            lines.append(
                f"| {c} | {policy} | {r.requests_per_sec:,.0f} | {r.p50_ms:.2f} ms | "
                f"{r.p99_ms:.2f} ms | {r.cpu_us_per_request:.0f} µs | {ratio} |"
            )
            if r.errors:
                lines.append(f"| | ({r.errors} errors) | | | | | |")
    lines += [
        "",
        "With `always` every turn of the server's event loop that wrote something waits for "
        "one fsync before its replies go out; the API's group commit puts the appends of "
        "concurrent requests into one turn. The cost follows the disk's fsync latency (here a "
        "shared virtual disk on a machine running other jobs): measure on yours, and choose "
        "`everysec` only where losing about a second of acknowledged events is acceptable.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per load run")
    parser.add_argument("--reps", type=int, default=3, help="alternating runs per policy")
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory of durability.md")
    args = parser.parse_args(argv)
    start = os.getloadavg()[0]
    results = measure(args.seconds, args.reps, (1, 16))
    text = report(results, (start, os.getloadavg()[0]))
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "durability.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
