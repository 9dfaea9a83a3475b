"""Markdown of the compiled-path table, and the issue's targets marked met / not met."""

from __future__ import annotations

from typing import Any

from bench.perf.throughput_format import cell, rate

__all__ = ["compiled_markdown", "targets"]

FAST = ("cmtl", "ipl", "pt-global", "pa-global", "pa-individual")
ACTIVE = ("amlc", "peer", "peer-share", "independent", "selective-sampling", "random-query")
OMTL = ("omtl-cov", "omtl-logdet", "omtl-vonneumann")
ROM = ("rom-pgd", "rom-rda")
ELLA = ("ella", "ella-dual", "ella-incremental", "ella-svd", "mtl-svd")
PEER_NAMES = {"vw": "VW -q tf, logistic (pyvw parse+learn)", "river": "River Perceptron x K"}


def _per_sec(entry: dict[str, Any] | None) -> float | None:
    return entry.get("per_sec") if entry else None


def _stream(c: dict[str, Any], label: str) -> dict[str, Any] | None:
    return next((s for s in c["streams"] if s["label"] == label), None)


def _at_least(figure: float | None, goal: float) -> tuple[str, bool]:
    return (rate(figure) if figure else "none", bool(figure and figure >= goal))


def targets(c: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """``(target, measured figure, met)`` for every target of the issue this table measures."""
    out: list[tuple[str, str, bool]] = []
    names = [n for s in c["streams"][:1] for n in s["ours"]]
    goals = (
        (FAST, "K=10 d=100", 5e6),
        (FAST, "K=10 d=1000", 1e6),
        (FAST, "sparse K=10 d=100,000", 1e6),
        (ACTIVE, "K=10 d=100", 2e6),
        (OMTL, "K=10 d=100", 1e6),
        (ROM, "K=10 d=100", 2e6),
    )
    for group, label, goal in goals:
        s = _stream(c, label)
        for name in (n for n in group if n in names and s):
            figure, met = _at_least(_per_sec(s["ours"][name]), goal)
            out.append((f"{name} >= {rate(goal)}/s on {label}", figure, met))
    for name in (n for n in FAST if any(k.startswith(f"{n}|") for k in c["grid"])):
        cells = {k: v for k, v in c["grid"].items() if k.startswith(f"{name}|")}
        worst = min(cells, key=lambda k: _per_sec(cells[k]) or 0.0)
        figure, met = _at_least(_per_sec(cells[worst]), 5e6)
        _, block, noise = worst.split("|")
        where = f"slowest: block {block}, noise {float(noise):.0%}"
        out.append((f"{name} >= 5 M/s at every block size and noise", f"{figure} ({where})", met))
    for name in names:
        worst = {}
        for peer in ("vw", "river"):
            ratios = [(r, s["label"]) for s in c["streams"] if (r := _ratio(s, name, peer))]
            if ratios:
                worst[peer] = min(ratios)
        if len(worst) == 2:
            (vw, vw_at), (river, river_at) = worst["vw"], worst["river"]
            figure = f"lowest: {vw:.1f}x VW ({vw_at}), {river:.1f}x River ({river_at})"
            out.append((f"{name} >= 10x VW and >= 50x River", figure, vw >= 10 and river >= 50))
    loops = c["loops"]
    figure, met = _at_least(_per_sec(loops.get("cmtl|score_and_learn_one")), 3e5)
    out.append(("cmtl score_and_learn_one Python loop >= 300 k/s", figure, met))
    ours, plain = (
        _per_sec(loops.get("cmtl|predict_one+learn_one")),
        _per_sec(loops.get("cmtl|numpy")),
    )
    if ours and plain:
        out.append(
            (
                "cmtl predict_one + learn_one loop >= the plain numpy loop",
                f"{rate(ours)} vs {rate(plain)}",
                ours >= plain,
            )
        )
    return out


def _ratio(s: dict[str, Any], name: str, peer: str) -> float | None:
    ours, theirs = _per_sec(s["ours"].get(name)), _per_sec(s["peers"].get(peer))
    return ours / theirs if ours and theirs else None


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "| --- | " + " | ".join("---:" for _ in head[1:]) + " |"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def _compile_section(c: dict[str, Any]) -> list[str]:
    comp = c.get("compile") or {}
    out = ["### Compile time at first use", ""]
    if not comp:
        return [*out, "Not measured in this run (`--quick` or `--no-compile-time`).", ""]
    empty, filled = comp.get("empty_cache", {}), comp.get("filled_cache", {})
    if "error" in empty or "error" in filled:
        return [*out, f"Failed: {empty.get('error') or filled.get('error')}", ""]
    out += [
        "Two fresh processes sharing a new, empty `NUMBA_CACHE_DIR`: the first compiles and "
        "fills the cache, the second loads from it (a restarted worker). CPU seconds.",
        "",
    ]
    rows = [["`learners.warm_kernels()`", f"{empty['warm_cpu']:.2f}", f"{filled['warm_cpu']:.2f}"]]
    late = []
    for name, first in empty["first_use"].items():
        again = filled["first_use"].get(name)
        if isinstance(first, str):
            late.append([f"{name} (first use failed)", first, str(again)])
        elif first > 0.05:
            late.append([f"{name}: first use after the warm-up", f"{first:.2f}", f"{again:.2f}"])
    out += _table(["", "empty cache", "filled cache"], rows + late)
    missing = ", ".join(r[0].split(":")[0] for r in late)
    out += [
        "",
        "Learners listed under the warm-up still compile at their first call after "
        "`warm_kernels()` (their kernels are not registered with it): "
        + (missing if late else "none")
        + ". In this process they were used once before any measurement, so no figure below "
        "includes compilation.",
        "",
    ]
    return out


def _streams_section(c: dict[str, Any]) -> list[str]:
    labels = [s["label"] for s in c["streams"]]
    rows = [
        [PEER_NAMES[p], *(cell(s["peers"].get(p)) for s in c["streams"])] for p in ("vw", "river")
    ]
    for name in c["streams"][0]["ours"]:
        rows.append([name, *(cell(s["ours"].get(name)) for s in c["streams"])])
    ratio_rows = []
    for name in c["streams"][0]["ours"]:
        cells = []
        for s in c["streams"]:
            for peer in ("vw", "river"):
                r = _ratio(s, name, peer)
                cells.append(f"{r:.1f}x" if r is not None else "-")
        ratio_rows.append([name, *cells])
    head = ["learner", *(f"{lab} /{p}" for lab in labels for p in ("VW", "River"))]
    return [
        f"### Events per second, `score_and_learn_many` on blocks of {c['main_block']:,}",
        "",
        *_table(["method", *labels], rows),
        "",
        "### Ratios: ours / VW and ours / River on the same stream",
        "",
        "VW's fastest path measured in this run is pyvw (parse + learn of text lines); "
        "VW's C++ driver on a cache file is not measured here.",
        "",
        *_table(head, ratio_rows),
        "",
    ]


def _grid_section(c: dict[str, Any]) -> list[str]:
    keys = list(c["grid"])
    names = list(dict.fromkeys(k.split("|")[0] for k in keys))
    cols = list(dict.fromkeys("|".join(k.split("|")[1:]) for k in keys))
    head = [
        "learner",
        *(f"block {int(b):,}, noise {float(n):.0%}" for b, n in (x.split("|") for x in cols)),
    ]
    rows = [[name, *(cell(c["grid"].get(f"{name}|{col}")) for col in cols)] for name in names]
    return [
        "### Block size x label noise (K=10 d=100)",
        "",
        "`score_and_learn_many` on fixed blocks; 50% noise is a stream of coin-flip labels "
        "(a mistake on about every other event).",
        "",
        *_table(head, rows),
        "",
    ]


def _loops_section(c: dict[str, Any]) -> list[str]:
    names = list(dict.fromkeys(k.split("|")[0] for k in c["loops"]))
    rows = [
        [name, *(cell(c["loops"].get(f"{name}|{loop}")) for loop in ("score_and_learn_one", "predict_one+learn_one", "numpy"))]
        for name in names
    ]  # fmt: skip
    return [
        "### Python loops, one event per call (K=10 d=100)",
        "",
        "`numpy` is the plain loop of the issue: predict with `W[t] @ x`, then "
        "`W += y outer(A^-1[:, t], x)` on a mistake (cmtl's initial `A^-1`).",
        "",
        *_table(["learner", "score_and_learn_one", "predict_one + learn_one", "numpy loop"], rows),
        "",
    ]


def _a_share(entry: dict[str, Any] | None, fixed: dict[str, Any] | None) -> str:
    """The A updates' share of the default run's time: ``1 - rate / rate with A fixed``."""
    if not (entry and fixed and entry.get("per_sec") and fixed.get("per_sec")):
        return "-"
    share = 1.0 - entry["per_sec"] / fixed["per_sec"]
    return f"{share:.0%} ({entry.get('a_update_calls', '?')} updates)"


def _family_section(c: dict[str, Any]) -> list[str]:
    names = list(c["streams"][0]["ours"])
    out = [
        "### OMTL: events/s and the share of CPU time in the A update (Eqs. 3.7-3.10)",
        "",
        "The A update runs inside the compiled pass. Its share of the time is measured against "
        "the same learner with A fixed (`epoch_rounds` past the end of the stream: the same "
        "weight pass with no A update; its mistakes differ a little from the default run's, "
        "and so does the cost of its weight steps): 1 - (events/s) / (events/s with A fixed). "
        "`every 10`: `a_update_every = 10`, A updated on every tenth mistake "
        "(docs/algorithms.md Sec. 2.8).",
        "",
    ]
    rows = []
    for name in (n for n in names if n in OMTL or n == "batchopt"):
        cells = []
        for label in ("K=10 d=100", "K=100 d=100"):
            s = _stream(c, label)
            e = s["ours"].get(name) if s else None
            variants = (s or {}).get("a_variants", {})
            fixed, every = variants.get(f"{name}|fixed"), variants.get(f"{name}|every 10")
            cells += [cell(e), cell(fixed), _a_share(e, fixed), cell(every)]
        rows.append([name, *cells])
    head = []
    for K in ("K=10", "K=100"):
        head += [f"{K} events/s", f"{K}, A fixed", f"{K} A share", f"{K}, every 10"]
    out += _table(["learner", *head], rows)
    out += ["", "### ELLA family: events/s and CPU cost per task refresh", ""]
    rows = []
    for name in (n for n in names if n in ELLA):
        cells = []
        for s in c["streams"]:
            e = s["ours"].get(name)
            per = (
                f"{1e3 * e['refresh_seconds'] / e['refresh_calls']:.2f} ms"
                if e and e.get("refresh_calls")
                else "-"
            )
            cells += [cell(e), per]
        rows.append([name, *cells])
    head = [
        "learner",
        *(f"{s['label']} {w}" for s in c["streams"] for w in ("events/s", "per refresh")),
    ]
    return [*out, *_table(head, rows), ""]


def compiled_markdown(c: dict[str, Any]) -> str:
    """The second table of ``throughput.md`` (see bench/perf/throughput_compiled_run.py)."""
    out = [
        "## Compiled paths (issue 17)",
        "",
        "Every rate is events per **CPU second** (`time.thread_time` of the measuring "
        "thread), not wall time: the host is shared. After `learners.warm_kernels()`; each "
        "learner with default hyperparameters in a forked child on the start of the stream, "
        "after an untimed pass of a throwaway learner over the same calls that settles the "
        "child (the copy-on-write faults of the fork are not the learner's; the peers run in "
        f"the parent), up to {c['seconds']:g} CPU s; peers up to {c['peer_seconds']:g} CPU s; "
        "a block the alarm interrupts adds its time, not its events; median of "
        f"{c['reps']} repetitions (one for a learner that used its whole allowance). Streams as above; events per stream: "
        + ", ".join(f"{s['label']}: {s['n']:,}" for s in c["streams"])
        + ". Blocks start at 8 rows and double while the next is expected to fit in the allowance, "
        "so a slow learner is measured at all; a learner whose first block outlives its "
        "allowance by far is shown as `< 1 event in S s`.",
        "",
    ]
    out += _compile_section(c)
    out += _streams_section(c)
    out += _grid_section(c)
    out += _loops_section(c)
    out += _family_section(c)
    out += ["### Targets of the issue", ""]
    out += _table(
        ["target", "measured", "met"],
        [[t, f, "met" if ok else "**not met**"] for t, f, ok in targets(c)],
    )
    errors = [
        f"- {name} on {s['label']}: {e['error']}"
        for s in c["streams"]
        for name, e in s["ours"].items()
        if "error" in e
    ]
    if errors:
        out += ["", "### Measurements that failed", "", *errors]
    out += ["", f"Compiled table run time: {c['total_seconds']:.0f} s (wall).", ""]
    return "\n".join(out)
