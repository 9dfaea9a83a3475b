"""Machine description and the markdown table of the throughput benchmark."""

from __future__ import annotations

import datetime as dt
import os
import platform
from typing import Any

from bench.perf.throughput_compiled_report import compiled_markdown
from bench.perf.throughput_format import cell, rate

__all__ = ["machine", "markdown", "rerender", "versions"]


def machine() -> dict[str, str]:
    """CPU model, cores, memory, OS and Python."""
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            mem_kb = int(f.readline().split()[1])
        memory = f"{mem_kb / 1024**2:.0f} GiB"
    except OSError:
        memory = "?"
    try:
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        load = "?"
    return {
        "load": load,
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": memory,
        "os": platform.platform(),
        "python": platform.python_version(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def versions(peers: dict[str, str]) -> dict[str, str]:
    """Versions of numpy, scipy and the peers."""
    import numpy
    import scipy

    from service import __version__

    return {"omtl": __version__, "numpy": numpy.__version__, "scipy": scipy.__version__, **peers}


def markdown(result: dict[str, Any]) -> str:
    """The results document (see bench/perf/throughput.py for the structure of ``result``)."""
    cols = [s["label"] for s in result["streams"]]
    out = ["# Learner throughput: ours against Vowpal Wabbit and River", ""]
    out.append(
        "Events per second of learn + progressive predict (each event is scored before it is "
        "learned), one process, BLAS pinned to one thread. Produced by `python -m bench.throughput`."
    )
    out.append("")
    m = result["machine"]
    out.append(
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory']} RAM, {m['os']}, "
        f"Python {m['python']}. Date: {m['date']}. Load average at the start (1, 5, 15 min): "
        f"{m['load']} (a shared host: single figures move between runs; compare within one run)."
    )
    out.append("")
    out.append("Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()) + ".")
    out.append("")
    out.append("Streams (bench/perf/throughput_streams.py): " + result["stream_note"])
    out.append("")
    if result["streams"]:
        out.append(result["method_note"])
        out.append("")
        out += _first_table(result, cols)
    if result.get("compiled"):
        out.append(compiled_markdown(result["compiled"]))
    out += [f"Total run time: {result['total_seconds']:.0f} s.", ""]
    return "\n".join(out)


def _first_table(result: dict[str, Any], cols: list[str]) -> list[str]:
    """The per-path table of ``score_and_learn_many`` (blocks of 128) and the per-event calls."""
    out: list[str] = []
    head = ["method", *cols]
    sep = ["---", *["---:"] * len(cols)]
    out.append("## Events per second")
    out.append("")
    out.append("| " + " | ".join(head) + " |")
    out.append("| " + " | ".join(sep) + " |")
    for peer in ("vw", "river"):
        title = result["peer_names"][peer]
        out.append(
            "| "
            + " | ".join([title, *(cell(s["peers"].get(peer)) for s in result["streams"])])
            + " |"
        )
        conv = [
            rate(s["peers"][peer]["convert_per_sec"]) if peer in s["peers"] else "-"
            for s in result["streams"]
        ]
        out.append("| " + " | ".join([f"(cost, excluded) row -> {peer} input", *conv]) + " |")
    for name in result["learners"]:
        for path in ("batch", "event"):
            cells = [cell(s["ours"].get(name, {}).get(path)) for s in result["streams"]]
            if all(c == "n/a" for c in cells):
                continue
            out.append("| " + " | ".join([f"{name} ({path})", *cells]) + " |")
    out.append("")
    out.append("## Ratios: ours / VW and ours / River (best of our two paths)")
    out.append("")
    out.append("| learner | " + " | ".join(f"{c} /VW | {c} /River" for c in cols) + " |")
    out.append("| --- | " + " | ".join("---: | ---:" for _ in cols) + " |")
    for name in result["learners"]:
        cells = []
        for s in result["streams"]:
            best = s["ours"].get(name, {}).get("best_per_sec")
            for peer in ("vw", "river"):
                p = s["peers"].get(peer)
                cells.append(f"{best / p['per_sec']:.1f}x" if best and p else "-")
        out.append("| " + " | ".join([name, *cells]) + " |")
    out.append("")
    out.append("## Online mistake rates on the same stream")
    out.append("")
    out.append(
        "Mistakes / events over the prefix each method processed within its time allowance "
        "(n below). `cmtl on peer's n` recomputes the multitask Perceptron's rate on exactly the "
        "peer's prefix. 5% label noise is the floor. On the sparse streams each label depends on "
        "~100 features most of which are rare, so within the prefixes measured here no method gets "
        "far below chance: those columns measure speed, not accuracy."
    )
    out.append("")
    out.append("| method | " + " | ".join(cols) + " |")
    out.append("| --- | " + " | ".join("---:" for _ in cols) + " |")
    for peer in ("vw", "river"):
        title = result["peer_names"][peer]
        cells = []
        same = []
        for s in result["streams"]:
            p = s["peers"].get(peer)
            cells.append(f"{100 * p['mistake_rate']:.1f}% (n={p['events']})" if p else "-")
            ref = s.get("reference_at", {}).get(peer)
            same.append(f"{100 * ref:.1f}%" if ref is not None else "-")
        out.append("| " + " | ".join([title, *cells]) + " |")
        out.append("| " + " | ".join([f"cmtl on {peer}'s n", *same]) + " |")
    for name in result["learners"]:
        cells = []
        for s in result["streams"]:
            e = s["ours"].get(name, {}).get("best")
            cells.append(
                f"{100 * e['mistakes'] / e['events']:.1f}% (n={e['events']})"
                if e and e.get("events")
                else "-"
            )
        out.append("| " + " | ".join([name, *cells]) + " |")
    errors = [
        f"- {name} on {s['label']} ({path}): {entry['error']}"
        for s in result["streams"]
        for name, paths in s["ours"].items()
        for path, entry in paths.items()
        if isinstance(entry, dict) and "error" in entry
    ]
    if errors:
        out += ["", "## Measurements that failed", "", *errors]
    out.append("")
    return out


def rerender(json_path: str, md_path: str) -> None:
    """Write the markdown table again from a saved ``throughput.json``."""
    import json

    with open(json_path) as f:
        result = json.load(f)
    with open(md_path, "w") as f:
        f.write(markdown(result))
