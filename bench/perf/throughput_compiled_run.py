"""Runs the compiled-path table (second table of ``python -m bench.throughput``).

Order: compile times (subprocesses with a fresh numba cache), then
:func:`learners.warm_kernels` and a first use of every learner in this process
(kernels the warm-up misses compile there, not in a measurement); per stream the peers and every
learner (``score_and_learn_many``, blocks of :data:`MAIN_BLOCK`); on K = 10
d = 100 the block-size x label-noise grid and the Python loops of
:data:`BLOCK_LEARNERS`; the OMTL learners also run with A fixed and with A updated on
every tenth mistake (:data:`A_VARIANTS`). Each learner measurement is a forked child
(:func:`~bench.perf.throughput_ours.call_isolated`) with a fresh learner on the
start of the stream, after an untimed pass that settles the child before its alarm
is set (:func:`~bench.perf.throughput_compiled.settle_blocks`, at most
:data:`SETTLE_SHARE` of the allowance); the figure is the median of ``reps``
repetitions (one for a learner that used its whole allowance).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import learners
from bench.perf.throughput_compile import compile_times, first_use
from bench.perf.throughput_compiled import (
    LOOPS,
    measure_blocks,
    measure_loop,
    settle_blocks,
    settle_loop,
)
from bench.perf.throughput_ours import call_isolated
from bench.perf.throughput_peers import measure_peer, median_entry, run_river, run_vw
from bench.perf.throughput_streams import BenchStream, make_stream

__all__ = [
    "A_STREAMS",
    "A_VARIANTS",
    "BLOCKS",
    "BLOCK_LEARNERS",
    "MAIN_BLOCK",
    "NOISES",
    "STREAMS",
    "run_compiled",
]

#: (label, K, d, sparse, events)
STREAMS = (
    ("K=10 d=100", 10, 100, False, 200_000),
    ("K=10 d=1000", 10, 1000, False, 40_000),
    ("sparse K=10 d=100,000", 10, 100_000, True, 40_000),
    ("K=100 d=100", 100, 100, False, 200_000),
)
#: The untimed pass that settles a forked child before a measurement stops starting
#: blocks once it has taken this share of the measurement's CPU allowance.
SETTLE_SHARE = 0.25
#: Rows per ``score_and_learn_many`` call in the per-stream table.
MAIN_BLOCK = 10_000
#: The learners of the block-size x noise grid and of the Python loops.
BLOCK_LEARNERS = ("cmtl", "ipl", "pt-global", "pa-global", "pa-individual")
BLOCKS = (1, 100, 10_000, 100_000)
NOISES = (0.05, 0.5)
#: The OMTL learners' runs beside the default one, on the streams of :data:`A_STREAMS`:
#: with A fixed (its first update after the stream's end), whose time against the
#: default run's is the A updates' share, and with A updated on every tenth mistake.
A_VARIANTS = ("fixed", "every 10")
A_STREAMS = ("K=10 d=100", "K=100 d=100")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _median_of(measure: Any, seconds: float, reps: int, settle: Any) -> dict[str, Any]:
    entries = []
    for _ in range(reps):
        entry = call_isolated(measure, seconds, timeout=20 * seconds + 60, prepare=settle)
        if not entry.get("per_sec"):
            return entry  # failed, or not one event in the allowance: no point repeating
        entries.append(entry)
        if entry["seconds"] >= seconds:
            break  # a slow learner, measured over its whole allowance: once is enough
    return median_entry(entries)


def _shown(entry: dict[str, Any]) -> str:
    if entry.get("per_sec"):
        return f"{entry['per_sec']:,.0f}/s"
    return str(entry.get("error", f"< 1 event in {entry.get('seconds', 0):.1f} s"))


def _stream_row(
    label: str, stream: BenchStream, names: list[str], seconds: float, peer_s: float, reps: int
) -> dict[str, Any]:
    n = stream.n
    peers = {
        "vw": measure_peer(run_vw, stream, n, peer_s, reps),
        "river": measure_peer(run_river, stream, n, peer_s, reps),
    }
    _log(f"== {label} ({n} events): " + ", ".join(f"{k} {_shown(v)}" for k, v in peers.items()))
    ours = {}
    for name in names:
        ours[name] = _blocks_of(name, stream, seconds, reps)
        _log(f"   {name}: {_shown(ours[name])}")
    variants = {}
    if label in A_STREAMS:
        for name in (m for m in names if _updates_a(m)):
            for variant in A_VARIANTS:
                params = {"epoch_rounds": n + 1} if variant == "fixed" else {"a_update_every": 10}
                key = f"{name}|{variant}"
                variants[key] = _blocks_of(name, stream, seconds, reps, params)
                _log(f"   {name}, A {variant}: {_shown(variants[key])}")
    return {"label": label, "n": n, "peers": peers, "ours": ours, "a_variants": variants}


def _updates_a(name: str) -> bool:
    """Whether a learner updates an interaction matrix A on its mistakes (the OMTL family)."""
    return any(p.name == "a_update_every" for p in learners.get(name).params)


def _blocks_of(
    name: str,
    stream: BenchStream,
    seconds: float,
    reps: int,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The per-stream measurement of one learner (blocks of :data:`MAIN_BLOCK`)."""
    n = stream.n
    return _median_of(
        lambda: measure_blocks(name, stream, n, MAIN_BLOCK, seconds, ramp=True, params=params),
        seconds,
        reps,
        lambda: settle_blocks(name, stream, n, MAIN_BLOCK, SETTLE_SHARE * seconds, params),
    )


def _grid(stream_of: dict[float, BenchStream], seconds: float, reps: int) -> dict[str, Any]:
    grid: dict[str, Any] = {}
    for name in BLOCK_LEARNERS:
        for noise, stream in stream_of.items():
            for block in BLOCKS:
                key = f"{name}|{block}|{noise:g}"
                grid[key] = _median_of(
                    lambda name=name, stream=stream, block=block: measure_blocks(
                        name, stream, stream.n, block, seconds, ramp=False
                    ),
                    seconds,
                    reps,
                    lambda name=name, stream=stream, block=block: settle_blocks(
                        name, stream, stream.n, block, SETTLE_SHARE * seconds
                    ),
                )
                _log(f"   {name} block {block} noise {noise:g}: {_shown(grid[key])}")
    return grid


def _loops(stream: BenchStream, seconds: float, reps: int) -> dict[str, Any]:
    loops: dict[str, Any] = {}
    for name in BLOCK_LEARNERS:
        for loop in LOOPS:
            if loop == "numpy" and name != "cmtl":
                continue
            key = f"{name}|{loop}"
            loops[key] = _median_of(
                lambda name=name, loop=loop: measure_loop(name, stream, stream.n, loop, seconds),
                seconds,
                reps,
                lambda name=name, loop=loop: settle_loop(
                    name, stream, stream.n, loop, SETTLE_SHARE * seconds
                ),
            )
            _log(f"   loop {key}: {_shown(loops[key])}")
    return loops


def run_compiled(
    names: list[str],
    seconds: float,
    peer_seconds: float,
    scale: float,
    reps: int,
    *,
    with_compile: bool = True,
) -> dict[str, Any]:
    """Measure the compiled-path table; returns its raw result document."""
    started = time.perf_counter()
    compiled: dict[str, Any] = {}
    if with_compile:
        _log("== compile times (fresh numba cache, then the same cache)")
        compiled = compile_times()
    t0 = time.thread_time()
    warm = learners.warm_kernels()
    warm_cpu = time.thread_time() - t0
    # kernels that warm_kernels does not cover compile (or load) at first use: do it
    # here, before forking, so that no measurement pays for it
    primed = {name: first_use(name) for name in names}
    rows = []
    first: dict[float, BenchStream] = {}
    for label, K, d, sparse, n_events in STREAMS:
        n = max(2000, int(n_events * scale))
        stream = make_stream(K, d, n, sparse=sparse, seed=K * 7 + d)
        rows.append(_stream_row(label, stream, names, seconds, peer_seconds, reps))
        if (K, d, sparse) == (10, 100, False):
            first[0.05] = stream
        del stream
    base = first[0.05]
    first[0.5] = make_stream(10, 100, base.n, seed=10 * 7 + 100, flip=0.5)
    _log("== block sizes x label noise, K=10 d=100")
    grid = _grid(first, seconds, reps)
    _log("== Python loops, K=10 d=100")
    loops = _loops(base, seconds, reps)
    return {
        "streams": rows,
        "grid": grid,
        "loops": loops,
        "compile": compiled,
        "warm_cpu_this_process": warm_cpu,
        "warm_wall_by_family": warm,
        "first_use_this_process": primed,
        "main_block": MAIN_BLOCK,
        "seconds": seconds,
        "peer_seconds": peer_seconds,
        "reps": reps,
        "total_seconds": time.perf_counter() - started,
    }
