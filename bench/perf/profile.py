"""Where a learner's compiled pass spends its CPU time: Linux ``perf`` with the kernels named.

numba's machine code lives in anonymous memory, so a plain ``perf record`` of a learner
shows its samples as bare addresses. This runs the learner's ``score_and_learn_many`` on
blocks of 10,000 rows (``--block``: down to one row, where the cost of each call shows)
over one of the throughput streams (the call and streams of ``bench/perf/checkouts.py``;
the blocks sliced before the profile, as the compiled table slices them before its clock)
in a child process under ``perf record``, with sampling switched on only around the
timed passes (``--control``: the kernels' loading, the stream's generation and each new
learner's creation stay out of the profile). Before it exits the child writes
``/tmp/perf-<pid>.map`` (the format perf reads for code generated at run time): every
function of every compiled library the process holds, from numba's cache or compiled
afresh, with its address. The report groups the samples by function (a numba name such as
``learners.adaptive.kernels._fused_rates2``; helpers compiled inline count in their
caller), by shared library for the rest (``libm``, the interpreter, the kernel), and gives
each one's share and nanoseconds per event (the share times the CPU time per event of the
profiled passes, ``time.thread_time``).

Needs ``perf`` (Debian: ``linux-perf``) and a ``perf_event_paranoid`` setting that lets the
user sample their own processes (at most 2). Run from the repository root::

    python -m bench.perf.profile amlc-adaptive
    python -m bench.perf.profile amlc --stream sparse --seconds 5 --top 12
    python -m bench.perf.profile cmtl --block 1
    python -m bench.perf.profile adaptive --params etas=\\"1.0\\"

The figures are per CPU second of the profiled thread; the sampling itself costs a few
per cent.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.perf.checkouts import BLOCK, LEAD, STREAMS

__all__ = ["compiled_functions", "demangle", "group_samples", "main"]

#: Samples per second per CPU (a prime, so that sampling does not lock onto a loop's period).
FREQUENCY = 2999
#: Largest size given to one function in the map (the gap to the next function otherwise).
MAX_SIZE = 1 << 16


def demangle(symbol: str) -> str:
    """A numba symbol as a dotted name: ``_ZN8learners4amlc7kernels9amlc_passB2v3...``
    gives ``learners.amlc.kernels.amlc_pass``. The C wrapper through which Python calls a
    kernel (``cfunc._ZN...``, ``_ZN7cpython...``) is marked ``[wrapper]``. Other symbols
    are returned unchanged."""
    name = symbol.removeprefix("cfunc.")
    if not name.startswith("_ZN"):
        return symbol
    rest = name[3:]
    parts: list[str] = []
    while rest and rest[0].isdigit():
        length = re.match(r"\d+", rest)
        assert length is not None
        size = int(length.group())
        start = len(length.group())
        parts.append(rest[start : start + size])
        rest = rest[start + size :]
    wrapper = symbol.startswith("cfunc.") or parts[:1] == ["cpython"]
    dotted = ".".join(p for p in parts if p != "cpython")
    return f"{dotted} [wrapper]" if wrapper else dotted


def _dispatchers() -> list[Any]:
    """Every numba dispatcher of this process: those that modules hold (a process whose
    objects were frozen, as the API's start-up does with ``gc.freeze()``, hides them from
    ``gc.get_objects()``) and those the collector still tracks."""
    import gc

    from numba.core.dispatcher import Dispatcher

    found: dict[int, Any] = {}
    for module in list(sys.modules.values()):
        for value in list(getattr(module, "__dict__", {}).values()):
            if isinstance(value, Dispatcher):
                found[id(value)] = value
    for obj in gc.get_objects():
        if isinstance(obj, Dispatcher):
            found[id(obj)] = obj
    return list(found.values())


def compiled_functions() -> dict[int, str]:
    """Address -> symbol of every function defined in a compiled library of this process
    (every specialisation of every numba dispatcher, :func:`_dispatchers`). A library
    loaded from the cache keeps its functions' definitions in the module it links from,
    one compiled here in its final module."""
    found: dict[int, str] = {}
    for dispatcher in _dispatchers():
        for result in dispatcher.overloads.values():
            library = result.library
            for module in (
                getattr(library, "_final_module", None),
                getattr(library, "_shared_module", None),
            ):
                if module is None:
                    continue
                for function in module.functions:
                    if function.is_declaration:
                        continue
                    address = library.get_pointer_to_function(function.name)
                    if address:
                        found[address] = function.name
    return found


def write_perf_map(functions: dict[int, str], path: Path) -> int:
    """``perf``'s map of run-time code: ``START SIZE NAME`` per line (hexadecimal), each
    function sized to the next one's start (at most :data:`MAX_SIZE`). Returns the lines."""
    starts = sorted(functions)
    with path.open("w") as out:
        for i, start in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else start + MAX_SIZE
            out.write(f"{start:x} {min(end - start, MAX_SIZE):x} {functions[start]}\n")
    return len(starts)


def _child(args: argparse.Namespace) -> None:
    """The profiled process: load, learn the first rows, then the timed passes with
    sampling enabled through perf's control pipe, then the map and the figures."""
    import learners
    from bench.perf.throughput_streams import make_stream

    K, d, sparse, n = STREAMS[args.stream]
    stream = make_stream(K, d, n, sparse=sparse, seed=1)
    params = json.loads(args.params_json)
    learners.load_kernels(args.learner, params)
    X, y, tasks = stream.X, stream.y, stream.task

    def fresh() -> Any:
        model = learners.make(args.learner, n_features=stream.d, n_tasks=K, **params)
        model.score_and_learn_many(X[:LEAD], y[:LEAD], tasks[:LEAD])
        return model

    fresh()  # first calls, first touch of the allocator's pages: outside the profile
    size = args.block
    blocks = [(X[a : a + size], y[a : a + size], tasks[a : a + size]) for a in range(LEAD, n, size)]
    control = Path(args.control)
    with open(control / "ctl", "w") as ctl, open(control / "ack") as ack:

        def sampling(command: str) -> None:
            ctl.write(command + "\n")
            ctl.flush()
            ack.readline()

        cpu = 0.0
        events = 0
        while cpu < args.seconds:
            model = fresh()  # a new learner and its first rows: outside the profile
            sampling("enable")
            start = time.thread_time()
            for rows, labels, block_tasks in blocks:
                model.score_and_learn_many(rows, labels, block_tasks)
            cpu += time.thread_time() - start
            sampling("disable")
            events += n - LEAD
    mapped = write_perf_map(compiled_functions(), Path(f"/tmp/perf-{os.getpid()}.map"))
    result = {"pid": os.getpid(), "events": events, "cpu": cpu, "mapped": mapped}
    (control / "result.json").write_text(json.dumps(result))


def _report_rows(data: Path) -> list[tuple[float, str, str]]:
    """``(share %, shared object, symbol)`` of every line of ``perf report``."""
    command = ["perf", "report", "-i", str(data), "--stdio", "--no-children"]
    text = subprocess.run(
        [*command, "--sort", "dso,sym", "--field-separator", "|"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = []
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) == 3 and fields[0].strip().endswith("%"):
            symbol = re.sub(r"^\[.\]\s*", "", fields[2].strip())
            rows.append((float(fields[0].strip()[:-1]), fields[1].strip(), symbol))
    return rows


def group_samples(rows: Iterable[tuple[float, str, str]]) -> dict[str, float]:
    """Shares per compiled function (numba's symbols, :func:`demangle`), per shared object
    for everything else (``libm.so.6``, ``[kernel.kallsyms]``, the interpreter...),
    largest first."""
    groups: dict[str, float] = {}
    for share, dso, symbol in rows:
        if symbol.startswith(("_ZN", "cfunc._ZN")):
            key = demangle(symbol)
        elif symbol.startswith("0x") or dso.startswith(("perf-", "[JIT]")):
            key = "compiled code outside the map"
        else:
            key = dso
        groups[key] = groups.get(key, 0.0) + share
    return dict(sorted(groups.items(), key=lambda item: -item[1]))


def _table(groups: dict[str, float], ns_per_event: float, top: int) -> str:
    total = sum(groups.values())
    lines = ["| where | share | ns per event |", "|---|---:|---:|"]
    shown = list(groups.items())[:top]
    for key, share in shown:
        part = share / total
        lines.append(f"| `{key}` | {100 * part:.1f}% | {part * ns_per_event:,.0f} |")
    rest = total - sum(share for _, share in shown)
    if rest > 0:
        lines.append(
            f"| the rest | {100 * rest / total:.1f}% | {rest / total * ns_per_event:,.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("learner", help="registry name of the learner")
    parser.add_argument("--stream", default="K=10", choices=list(STREAMS))
    parser.add_argument(
        "--params", default="", help="k=v,... with JSON values, as bench.perf.checkouts"
    )
    parser.add_argument("--block", type=int, default=BLOCK, help="rows per call")
    parser.add_argument("--seconds", type=float, default=4.0, help="CPU seconds profiled")
    parser.add_argument("--top", type=int, default=15, help="rows of the table")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--control", help=argparse.SUPPRESS)
    parser.add_argument("--params-json", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args)
        return
    if shutil.which("perf") is None:
        raise SystemExit("needs Linux perf on the PATH (Debian: apt-get install linux-perf)")
    from bench.perf.checkouts import _params

    with tempfile.TemporaryDirectory(prefix="omtl-profile-") as tmp:
        control = Path(tmp)
        os.mkfifo(control / "ctl")
        os.mkfifo(control / "ack")
        data = control / "perf.data"
        child = [
            sys.executable, "-m", "bench.perf.profile", args.learner, "--child",
            "--stream", args.stream, "--block", str(args.block), "--seconds", str(args.seconds),
            "--control", tmp, "--params-json", json.dumps(_params(args.params)),
        ]  # fmt: skip
        record = [
            "perf", "record", "-q", "-F", str(FREQUENCY), "-D", "-1",
            "--control", f"fifo:{control / 'ctl'},{control / 'ack'}", "-o", str(data), "--",
        ]  # fmt: skip
        done = subprocess.run(record + child, capture_output=True, text=True)
        if done.returncode != 0 or not (control / "result.json").exists():
            raise SystemExit(f"perf record failed:\n{done.stderr}")
        result = json.loads((control / "result.json").read_text())
        perf_map = Path(f"/tmp/perf-{result['pid']}.map")
        try:
            groups = group_samples(_report_rows(data))
        finally:
            perf_map.unlink(missing_ok=True)
    rate = result["events"] / result["cpu"]
    print(
        f"{args.learner} on {args.stream}{' ' + args.params if args.params else ''}, "
        f"blocks of {args.block:,}: "
        f"{rate / 1e6:.3f} M events per CPU second while profiled "
        f"({result['events']:,} events, {result['mapped']} compiled functions mapped)\n"
    )
    print(_table(groups, 1e9 / rate, args.top))


if __name__ == "__main__":
    main()
