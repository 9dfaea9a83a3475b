"""Start-up time of the ``omtl`` command line (run by command, not in CI).

Times, over several runs each, the wall clock of ``omtl --version`` (answered
before any command module, numpy or scipy is imported), of two commands that
import only their own module (``omtl keys token``, ``omtl up --help``) and of
``omtl --help`` (built from the commands' declarations, importing none of
them), as fresh processes. Prints the medians and writes ``bench/results/cli_startup.md``.

Usage: ``python -m bench.perf.cli_startup [--runs 10]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import RESULTS

OMTL = str(Path(sys.executable).parent / "omtl")


def wall(args: list[str], runs: int) -> tuple[float, float]:
    """Median and worst wall-clock seconds of ``omtl args`` over ``runs`` fresh processes."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([OMTL, *args], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", type=Path, default=RESULTS / "cli_startup.md")
    args = parser.parse_args()
    rows = []
    for command in (["--version"], ["keys", "token"], ["up", "--help"], ["--help"]):
        median, worst = wall(command, args.runs)
        rows.append(f"| `omtl {' '.join(command)}` | {median * 1000:.0f} | {worst * 1000:.0f} |")
        print(rows[-1], flush=True)
    text = (
        "# omtl start-up\n\n"
        f"`python -m bench.perf.cli_startup --runs {args.runs}`: wall clock of fresh processes, "
        "milliseconds (the machine is shared; see the load below).\n\n"
        "| command | median | worst |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    if load:
        text += f"\nLoad average during the run: {' '.join(load)}.\n"
    args.out.write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
