"""Two checkouts of the learners, side by side: events per CPU second of each on the same streams.

A change to a kernel is judged against the code before it, measured in the same run:
single figures move by up to 2x between runs on a shared host, while two versions
measured in alternation move together. This runs ``score_and_learn_many`` on blocks of
10,000 (the compiled table's call, ``bench/perf/throughput_compiled.py``, with the blocks
sliced before the clock as there) over the throughput streams
(``bench/perf/throughput_streams.py``) for each checkout in turn, each in a fresh process
that imports that checkout's ``learners`` and loads its kernels first
(:func:`learners.warm_kernels`, outside the timing), ``--rounds`` times, alternating, and
reports each checkout's best figure and their ratio. ``--calls`` measures the per-event
calls instead (:func:`measure_calls`): ``score_and_learn_one``, ``decision_one``, a batch
of one row, a batch of one float32 read-only row with fresh label and task arrays
(how the service's worker hands a labelled event over), and ``decide_and_query`` on such a
row (the worker's call for an unlabelled event), calls per CPU second from a state learned
on the rest of the stream.

A checkout is any directory holding a ``learners`` package, e.g. a worktree of an
earlier commit: ``git worktree add /tmp/before HEAD~3``.

Usage::

    python -m bench.perf.checkouts /tmp/before . --learners adaptive-logistic,cmtl
    python -m bench.perf.checkouts /tmp/before . --learners omtl-logdet \\
        --params epoch_rounds=1000 --streams K=10,K=100
    python -m bench.perf.checkouts /tmp/before . --learners adaptive-auto --calls
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.perf.throughput_streams import BenchStream

#: The streams, as in the compiled table: (label, K, d, sparse, events).
STREAMS = {
    "K=10": (10, 100, False, 60_000),
    "K=10 d=1000": (10, 1000, False, 20_000),
    "sparse": (10, 100_000, True, 20_000),
    "K=100": (100, 100, False, 20_000),
}
BLOCK = 10_000
#: One learner on one stream (:func:`_cases`).
Case = tuple[str, "BenchStream", str, dict[str, Any]]
#: Rows learned before the timing (first touch of the state, the kernels' first call).
LEAD = 200


def _cases(names: list[str], params: dict[str, Any], streams: list[str]) -> Iterator[Case]:
    """Each learner on each stream: (stream label, the stream, the learner's name, the
    ``params`` it has), after the kernels are loaded (this process's ``learners``)."""
    import learners  # the checkout's (see _child)
    from bench.perf.throughput_streams import make_stream

    learners.warm_kernels()
    for label in streams:
        K, d, sparse, n = STREAMS[label]
        stream = make_stream(K, d, n, sparse=sparse, seed=1)
        for name in names:
            accepted = {p.name for p in learners.get(name).params}
            yield label, stream, name, {k: v for k, v in params.items() if k in accepted}


def measure(names: list[str], params: dict[str, Any], streams: list[str], reps: int) -> dict:
    """Events per CPU second of each learner on each stream, best of ``reps`` (this process's
    ``learners``)."""
    import learners  # the checkout's (see _child)

    out: dict[str, float] = {}
    for label, stream, name, kwargs in _cases(names, params, streams):
        X, y, tasks, n = stream.X, stream.y, stream.task, stream.n
        blocks = [
            (X[a : a + BLOCK], y[a : a + BLOCK], tasks[a : a + BLOCK])
            for a in range(LEAD, n, BLOCK)
        ]
        best = float("inf")
        for _ in range(reps):
            model = learners.make(name, n_features=stream.d, n_tasks=stream.n_tasks, **kwargs)
            model.score_and_learn_many(X[:LEAD], y[:LEAD], tasks[:LEAD])
            start = time.thread_time()
            for rows, labels, block_tasks in blocks:  # sliced before the clock, as the table
                model.score_and_learn_many(rows, labels, block_tasks)
            best = min(best, time.thread_time() - start)
        out[f"{name} on {label}"] = (n - LEAD) / best
    return out


#: Events each kind of per-event call is timed on (the rest of the stream is learned first).
CALLS = 5_000


def measure_calls(
    names: list[str], params: dict[str, Any], streams: list[str], reps: int
) -> dict[str, float]:
    """Calls per CPU second of each learner's per-event calls (module docstring), each kind
    on a copy of the state learned on all but the last :data:`CALLS` events of the stream,
    best of ``reps`` (this process's ``learners``)."""
    import numpy as np

    import learners  # the checkout's (see _child)

    out: dict[str, float] = {}
    for label, stream, name, kwargs in _cases(names, params, streams):
        X, y, tasks, lead = stream.X, stream.y, stream.task, stream.n - CALLS
        rows32 = X[lead:]
        if isinstance(rows32, np.ndarray):
            rows32 = rows32.astype(np.float32)
            rows32.flags.writeable = False
        model = learners.make(name, n_features=stream.d, n_tasks=stream.n_tasks, **kwargs)
        model.score_and_learn_many(X[:lead], y[:lead], tasks[:lead])
        state = model.state_dict()
        for kind in CALL_KINDS:
            best = float("inf")
            for _ in range(reps):
                fresh = learners.from_state_dict(state)
                start = time.thread_time()
                _calls(kind, fresh, X, y, tasks, rows32, lead)
                best = min(best, time.thread_time() - start)
            out[f"{name} {kind} on {label}"] = CALLS / best
    return out


#: The per-event calls :func:`measure_calls` times.
CALL_KINDS = (
    "score_and_learn_one",
    "decision_one",
    "a batch of one row",
    "one float32 row as the worker",
    "an unlabelled float32 row, decide_and_query",
)


def _calls(kind: str, model: Any, X: Any, y: Any, tasks: Any, rows32: Any, lead: int) -> None:
    """The per-event calls of ``kind`` on events ``lead`` to the end (:data:`CALL_KINDS`)."""
    import numpy as np

    n = y.shape[0]
    if kind == "score_and_learn_one":
        for i in range(lead, n):
            model.score_and_learn_one(X[i], float(y[i]), int(tasks[i]))
    elif kind == "decision_one":
        for i in range(lead, n):
            model.decision_one(X[i], int(tasks[i]))
    elif kind == "a batch of one row":
        for i in range(lead, n):
            model.score_and_learn_many(X[i : i + 1], y[i : i + 1], tasks[i : i + 1])
    elif kind == "one float32 row as the worker":
        for i in range(lead, n):
            label, task = np.full(1, float(y[i])), np.full(1, int(tasks[i]), dtype=np.int64)
            model.score_and_learn_many(rows32[i - lead : i - lead + 1], label, task)
    else:
        for i in range(lead, n):
            model.decide_and_query(rows32[i - lead], int(tasks[i]))


def _child(checkout: Path, args: argparse.Namespace) -> dict[str, float]:
    """``measure`` (or ``measure_calls``) in a fresh interpreter whose ``learners`` is the
    checkout's."""
    what = "measure_calls" if args.calls else "measure"
    code = (
        "import json, sys; "
        "from bench.perf import checkouts, throughput_streams; "  # this tree's benchmark
        "sys.path.insert(0, sys.argv[1]); "  # the checkout's learners
        f"print(json.dumps(checkouts.{what}(*json.loads(sys.argv[2]))))"
    )
    spec = json.dumps(
        [args.learners.split(","), _params(args.params), args.streams.split(","), args.reps]
    )
    bench_root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", code, str(checkout.resolve()), spec],
        capture_output=True,
        text=True,
        cwd=bench_root,
        env={**os.environ, "PYTHONPATH": bench_root},
    )
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: the measurement failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _params(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        out[key] = json.loads(value)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="checkout measured first in each round")
    parser.add_argument("after", type=Path, help="checkout measured second in each round")
    parser.add_argument("--learners", required=True, help="comma-separated learner names")
    parser.add_argument(
        "--params", default="", help="k=v,... given to every learner that has the parameter"
    )
    parser.add_argument(
        "--streams", default="K=10", help=f"comma-separated, among: {', '.join(STREAMS)}"
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the checkouts")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per process (best kept)")
    parser.add_argument(
        "--calls", action="store_true", help="time the per-event calls (module docstring)"
    )
    args = parser.parse_args(argv)
    runs: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.rounds):
        for side, checkout in (("before", args.before), ("after", args.after)):
            for key, rate in _child(checkout, args).items():
                runs.setdefault(key, {}).setdefault(side, []).append(rate)
    print(f"before: {args.before}\nafter: {args.after}\n")
    unit = "calls" if args.calls else "events"
    print(f"| learner and stream | before, {unit}/CPU s | after | after / before |")
    print("|---|---:|---:|---:|")
    for key, sides in runs.items():
        before, after = max(sides["before"]), max(sides["after"])
        print(f"| {key} | {before / 1e3:,.1f} k | {after / 1e3:,.1f} k | {after / before:.2f} |")


if __name__ == "__main__":
    main()
