"""Learner throughput against Vowpal Wabbit and River (``make bench``).

Runs every registered learner and the two peers on the same synthetic
related-task streams (K in {10, 100}; dense d in {100, 1000}; sparse
d = 100,000 with ~100 non-zeros) and reports learn + progressive-predict events
per second, the ratios ours / VW and ours / River, and online mistake rates.
Prints the markdown table and writes it to ``bench/results/throughput.md`` (raw
figures in ``throughput.json``). The peers are optional (``pip install
vowpalwabbit river``); without them only our learners are measured.

Usage: ``python -m bench.throughput [--seconds S] [--learners a,b] [--quick] [--out DIR]``
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import learners  # noqa: E402
from bench import RESULTS  # noqa: E402
from bench.perf.throughput_compiled_run import run_compiled  # noqa: E402
from bench.perf.throughput_ours import BATCH, run_isolated  # noqa: E402
from bench.perf.throughput_peers import (  # noqa: E402
    measure_peer,
    median_entry,
    peer_versions,
    run_river,
    run_vw,
)
from bench.perf.throughput_report import machine, markdown, versions  # noqa: E402
from bench.perf.throughput_streams import make_stream  # noqa: E402

#: (K, d, sparse, events generated)
CONFIGS = (
    (10, 100, False, 100_000),
    (10, 1000, False, 30_000),
    (100, 100, False, 100_000),
    (100, 1000, False, 30_000),
    (10, 100_000, True, 60_000),
    (100, 100_000, True, 60_000),
)
REFERENCE = "cmtl"
STREAM_NOTE = (
    "tasks uniform over K; w_k = w0 + 0.5 u_k (|w0| = 1, u_k ~ N(0, I/d)); y = sign(w_k.x) "
    "with 5% of labels flipped; dense x ~ N(0, I) scaled to unit norm; sparse: 80-120 "
    "distinct feature ids out of 100,000 with a Zipf-like skew (rank d u^3), positive "
    "values, unit norm."
)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _best(paths: dict[str, Any]) -> dict[str, Any] | None:
    ok = [p for p in paths.values() if isinstance(p, dict) and p.get("events")]
    return max(ok, key=lambda p: p["per_sec"]) if ok else None


def _measure_ours(
    name: str, stream: Any, n: int, seconds: float, path: str, reps: int
) -> dict[str, Any]:
    entries = []
    for _ in range(reps):
        entry = run_isolated(name, stream, n, seconds, path, [], timeout=10 * seconds + 30)
        if not entry.get("events"):
            return entry  # skipped, failed or out of memory: no point repeating
        entry["per_sec"] = entry["events"] / entry["seconds"]
        entries.append(entry)
    return median_entry(entries)


def run(
    names: list[str], seconds: float, peer_seconds: float, scale: float, reps: int
) -> dict[str, Any]:
    """Measure everything; returns the raw result document."""
    started = time.perf_counter()
    host = machine()
    available = peer_versions()
    # Load (or compile) every kernel here, before the first fork: a child that compiled
    # one itself did so under its CPU-time alarm, and an alarm that interrupted numba
    # while it wrote the on-disk cache left entries that later processes could not load.
    learners.warm_kernels()
    streams = []
    for K, d, sparse, n_events in CONFIGS:
        n = max(1000, int(n_events * scale))
        stream = make_stream(K, d, n, sparse=sparse, seed=K * 7 + d)
        _log(f"== {stream.label}: {n} events")
        peers: dict[str, Any] = {}
        for key, runner in (("vw", run_vw), ("river", run_river)):
            if available[{"vw": "vowpalwabbit", "river": "river"}[key]] == "missing":
                continue
            peers[key] = res = measure_peer(runner, stream, n, peer_seconds, reps)
            _log(
                f"   {res['name']}: {res['per_sec']:,.0f}/s, mistakes {100 * res['mistake_rate']:.1f}%"
            )
        prefixes = sorted({p["events"] for p in peers.values()})
        ours: dict[str, Any] = {}
        for name in names:
            ours[name] = {}
            for path in ("batch", "event"):
                ours[name][path] = _measure_ours(name, stream, n, seconds, path, reps)
            best = _best(ours[name])
            ours[name]["best"] = best
            ours[name]["best_per_sec"] = best["per_sec"] if best else None
            shown = {
                p: (f"{e['per_sec']:,.0f}/s" if e.get("events") else next(iter(e.values())))
                for p, e in ours[name].items()
                if p in ("batch", "event")
            }
            _log(f"   {name}: {shown}")
        reference_at = {}
        ref = {}
        if REFERENCE in names and prefixes:
            # the whole stream (or as much as one minute allows), for rates on the peers' prefixes
            ref = run_isolated(
                REFERENCE, stream, max(prefixes), 60.0, "batch", prefixes, timeout=90
            )
        for key, p in peers.items():
            at = ref.get("mistakes_at", {}).get(str(p["events"]))
            reference_at[key] = at / p["events"] if at is not None else None
        streams.append(
            {
                "label": stream.label,
                "n": n,
                "peers": peers,
                "ours": ours,
                "reference_at": reference_at,
            }
        )
        del stream
    return {
        "machine": host,
        "versions": versions(available),
        "learners": names,
        "streams": streams,
        "peer_names": {
            "vw": "VW -q tf, logistic (pyvw parse+learn)",
            "river": "River Perceptron x K",
        },
        "stream_note": (
            STREAM_NOTE
            + " Events per stream: "
            + ", ".join(f"{s['label']}: {s['n']}" for s in streams)
            + "."
        ),
        "method_note": (
            f"Ours: every registered learner with default hyperparameters (learners of both kinds "
            f"switched to classification; OMTL learners update A after a priming of 1,000 rounds), seed 0, float64. "
            f"`batch` = `score_and_learn_many` on blocks of {BATCH} rows (passive learners); "
            f"`event` = `decision_one`, `query_one`, `learn_one` per event (sparse rows as "
            f"(indices, values) pairs), after `learners.warm_kernels()` in the parent process. Each measurement runs until the stream ends or {seconds:g} s "
            f"of learner CPU time (`time.thread_time`, the denominator of every rate: the host is shared); peers get {peer_seconds:g} s; each figure is the median of "
            f"{reps} such repetitions, each from a fresh learner on the start of the stream. Input conversion for the peers (rows -> VW text lines / River dicts) is timed "
            f"separately and excluded. Ratios > 1 mean ours is faster."
        ),
        "total_seconds": time.perf_counter() - started,
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.25, help="learner time per repetition")
    parser.add_argument("--peer-seconds", type=float, default=1.0, help="peer time per repetition")
    parser.add_argument(
        "--compiled-seconds",
        type=float,
        default=0.5,
        help="learner CPU time per repetition in the compiled table",
    )
    parser.add_argument("--reps", type=int, default=3, help="repetitions (the median is kept)")
    parser.add_argument("--learners", help="comma-separated learners (default: all registered)")
    parser.add_argument("--quick", action="store_true", help="short streams, for a smoke run")
    parser.add_argument("--out", default=str(RESULTS), help="output folder")
    parser.add_argument(
        "--tables",
        default="first,compiled",
        help="which tables: first (blocks of 128 and per-event calls), compiled (issue 17)",
    )
    parser.add_argument(
        "--no-compile-time",
        action="store_true",
        help="skip the compile-time measurement (always skipped with --quick)",
    )
    args = parser.parse_args(argv)
    names = (
        [n.strip() for n in args.learners.split(",") if n.strip()]
        if args.learners
        else [i.name for i in learners.available() if i.kind in ("classification", "both")]
    )
    scale = 0.05 if args.quick else 1.0
    seconds = 0.2 if args.quick else args.seconds
    peer_seconds = 0.3 if args.quick else args.peer_seconds
    reps = 1 if args.quick else args.reps
    tables = {t.strip() for t in args.tables.split(",")}
    if "first" in tables:
        result = run(names, seconds, peer_seconds, scale, reps)
    else:
        result = {
            "machine": machine(),
            "versions": versions(peer_versions()),
            "learners": names,
            "streams": [],
            "stream_note": STREAM_NOTE,
            "total_seconds": 0.0,
        }
    if "compiled" in tables:
        started = time.perf_counter()
        result["compiled"] = run_compiled(
            names,
            0.1 if args.quick else args.compiled_seconds,
            peer_seconds,
            0.05 if args.quick else 1.0,
            reps,
            with_compile=not (args.quick or args.no_compile_time),
        )
        result["total_seconds"] += time.perf_counter() - started
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "throughput-quick" if args.quick else "throughput"
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1, default=float) + "\n")
    text = markdown(result)
    print(text)
    (out / f"{stem}.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
