"""What API keys cost on ``POST /predict`` (docs/architecture.md, "Authentication and roles").

Runs the real app in-process (its lifespan, a throwaway embedded Redis) and
calls it through ASGI directly, so the figures are the app's own CPU per
request, without an HTTP server or client: ``/predict`` with ``OMTL_AUTH=off``
against ``OMTL_AUTH=required`` with a cached key, for ``learn=false`` (scoring
only) and ``learn=true`` (one append to the log). Also times the key check
alone (:meth:`service.auth.verifier.KeyVerifier.verify`, cached).

``python -m bench.perf.auth_overhead [--requests N]`` writes
``bench/results/auth_overhead.md`` and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson

from service.api.access import AccessControl
from service.api.app import create_app
from service.api.middleware import AuthMiddleware
from service.auth.store import create_key
from service.auth.verifier import KeyVerifier
from service.embedded_redis import EmbeddedRedis
from service.settings import Settings
from service.store import connect_async

RESULTS = Path(__file__).resolve().parents[1] / "results" / "auth_overhead.md"


async def _call(app: Any, body: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """One POST /predict through ASGI; returns the status."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/predict",
        "raw_path": b"/predict",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *headers,
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


async def _predict_us(url: str, learn: bool, n: int) -> tuple[float, float]:
    """Median CPU microseconds per request without and with keys: :func:`_pair_us` with
    either app built first, averaged."""
    one = await _pair_us(url, learn, n, ("off", "required"))
    two = await _pair_us(url, learn, n, ("required", "off"))
    return (one[0] + two[1]) / 2, (one[1] + two[0]) / 2


async def _pair_us(url: str, learn: bool, n: int, modes: tuple[str, str]) -> tuple[float, float]:
    """Median CPU microseconds of ``n`` requests to each of two apps with the ``modes``
    (built in that order), which take turns request by request, so that the load of the
    shared machine hits both alike."""
    client = connect_async(url)
    token, _ = await create_key(client, "producer", f"bench-{time.time_ns()}")
    await client.aclose()
    body = orjson.dumps({"task": "t0", "x": [0.1] * 10, "learn": learn})
    apps = []
    for auth in modes:
        settings = Settings(redis_url=url, auth=auth, default_n_features=10, max_backlog=10**9)
        headers = [(b"authorization", f"Bearer {token}".encode())] if auth == "required" else []
        apps.append((create_app(settings), headers))
    times: list[list[int]] = [[], []]
    (first, _), (second, _) = apps
    async with first.router.lifespan_context(first), second.router.lifespan_context(second):
        for app, headers in apps:
            for _ in range(200):  # warm both
                assert await _call(app, body, headers) == 200
        for k in range(n):
            for i in (0, 1) if k % 2 == 0 else (1, 0):  # neither always goes first
                app, headers = apps[i]
                start = time.process_time_ns()
                await _call(app, body, headers)
                times[i].append(time.process_time_ns() - start)
    return statistics.median(times[0]) / 1e3, statistics.median(times[1]) / 1e3


async def _verify_us(url: str, n: int) -> float:
    client = connect_async(url)
    token, _ = await create_key(client, "viewer", f"verify-{time.time_ns()}")
    verifier = KeyVerifier(client, check_every_s=3600.0)
    await verifier.verify(token)
    start = time.process_time()
    for _ in range(n):
        await verifier.verify(token)
    elapsed = time.process_time() - start
    await client.aclose()
    return elapsed / n * 1e6


async def _middleware_us(url: str, n: int) -> tuple[float, float]:
    """CPU microseconds of :class:`AuthMiddleware` around an app that does nothing, off and
    required (a cached key): the whole per-request cost of authentication."""
    client = connect_async(url)
    token, _ = await create_key(client, "producer", f"mw-{time.time_ns()}")

    async def nothing(scope: Any, receive: Any, send: Any) -> None:
        return None

    figures = []
    for required in (False, True):
        access = AccessControl.build(Settings(redis_url=url), client, required)
        holder = SimpleNamespace(state=SimpleNamespace(access=access))
        middleware = AuthMiddleware(nothing)
        headers = [(b"authorization", f"Bearer {token}".encode())]
        scope = {"type": "http", "path": "/predict", "headers": headers, "app": holder}
        await middleware(dict(scope), nothing, nothing)
        start = time.process_time()
        for _ in range(n):
            await middleware(dict(scope), nothing, nothing)
        figures.append((time.process_time() - start) / n * 1e6)
    await client.aclose()
    return figures[0], figures[1]


async def run(n: int) -> str:
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp)) as server:
        rows = []
        for learn in (False, True):
            off, required = await _predict_us(server.url, learn, n)
            rows.append((learn, off, required))
        verify = await _verify_us(server.url, n * 10)
        mw_off, mw_on = await _middleware_us(server.url, n * 10)
    lines = [
        "# API keys on POST /predict",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}; `python -m bench.perf.auth_overhead "
        f"--requests {n}`. The app in-process through ASGI (no HTTP server): two apps, "
        "without and with keys, take turns request by request; median CPU time (process "
        "time of this process: the API's side, Redis excluded) per request, averaged over "
        "both orders of building the two apps.",
        "",
        "| /predict | OMTL_AUTH=off (us CPU) | required, cached key (us CPU) | overhead (us) | overhead |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for learn, off, required in rows:
        lines.append(
            f"| learn={str(learn).lower()} | {off:.1f} | {required:.1f} | {required - off:.1f} "
            f"| {100 * (required - off) / off:.1f}% |"
        )
    lines += [
        "",
        f"The key check alone (`KeyVerifier.verify`, cached key): {verify:.2f} us CPU. "
        f"The whole authentication middleware around an app that does nothing: {mw_off:.2f} us "
        f"with OMTL_AUTH=off, {mw_on:.2f} us with a cached key, i.e. {mw_on - mw_off:.2f} us "
        "per request; the endpoint's role and model checks are attribute reads. The "
        "end-to-end rows include the Redis round trip (socket send and poll are most of "
        f"the time) on a shared machine (load average {os.getloadavg()[0]:.1f} at the end "
        "of this run).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000, help="requests per app")
    args = parser.parse_args()
    text = asyncio.run(run(args.requests))
    RESULTS.write_text(text)
    print(text)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
