"""The markdown tables, the target checks and the plots of ``bench.quality``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

__all__ = ["markdown", "plot_labels", "plot_online"]

#: The issue's budgets (fractions of the training rows) for the "at every budget" target.
TARGET_FRACTIONS = ("0.05", "0.1", "0.25", "0.5")


def _pct(entry: dict[str, Any] | None) -> str:
    if not entry or "mean" not in entry:
        return "—"
    ci = entry.get("ci95", math.nan)
    tail = f" ± {100 * ci:.2f}" if math.isfinite(ci) else ""
    return f"{100 * entry['mean']:.2f}{tail}%"


def _diff(entry: dict[str, Any] | None) -> str:
    if not entry:
        return "—"
    mark = " (CI excludes 0)" if entry.get("excludes_zero") else ""
    return f"{100 * entry['mean']:+.2f} ± {100 * entry['ci95']:.2f} pt{mark}"


def _online_summary(streams: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| stream | events | default (no tuning) | best of ours (tuned) | best peer (tuned) "
        "| default − best peer | best of ours − best peer |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in streams:
        default, ours, peer = s["default"], s.get("best_ours"), s.get("best_peer")
        lines.append(
            f"| {s['stream']} | {s['events']:,} | {default['name']} {_pct(default)} "
            f"| {ours['learner'] + ' ' + _pct(ours) if ours else '—'} "
            f"| {peer['system'] + ' ' + _pct(peer) if peer else '—'} "
            f"| {_diff(s.get('default_vs_best_peer'))} | {_diff(s.get('best_ours_vs_best_peer'))} |"
        )
    return lines


def _online_detail(s: dict[str, Any]) -> list[str]:
    rows: list[tuple[float, str]] = []
    for key, v in s["peers"]["systems"].items():
        rows.append((v["mean"], f"| {key} | `{v['vw_args'] or v['config']}` | {_pct(v)} |"))
    for name, v in s["ours"].items():
        if "rates" in v:
            rows.append((v["mean"], f"| {name} | `{v['params'] or 'defaults'}` | {_pct(v)} |"))
    failed = [f"{name} ({v['error']})" for name, v in s["ours"].items() if "rates" not in v]
    out = [
        f"### {s['stream']}",
        "",
        f"{s['description']} — {s['events']:,} events, {s['tasks']} tasks, "
        f"{s['features']:,} features; {s['wall_seconds']:.0f} s.",
        "",
        "| system | configuration (tuned on the separate shuffle) | mistake rate |",
        "|---|---|---|",
    ]
    out += [line for _, line in sorted(rows)]
    if failed:
        out += ["", "Not measured: " + "; ".join(failed) + "."]
    return [*out, ""]


def _labels_table(d: dict[str, Any]) -> list[str]:
    fracs = sorted(d["budgets"], key=float)
    head = " | ".join(f"{100 * float(f):.0f}% ({d['budgets'][f]})" for f in fracs)
    out = [
        f"### {d['dataset']}",
        "",
        f"{d['description']} {d['train_rows']} training rows, {d['runs']} runs. "
        f"VW configuration (tuned on a separate split, all labels): `{d['vw_config']}`; "
        f"its test AUC with all labels: {d['vw_all_labels_auc']:.4f}.",
        "",
        "Test accuracy / AUC (labels used) at each budget:",
        "",
        f"| system | {head} |",
        "|---|" + "---|" * len(fracs),
    ]
    for name, curve in d["systems"].items():
        cells = []
        for f in fracs:
            p = curve.get(f)
            cells.append(
                "—"
                if p is None
                else f"{p['accuracy']['mean']:.3f} / {p['auc']['mean']:.3f} "
                f"({p['labels']['mean']:.0f})"
            )
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    reach = d["reaches_vw_all_labels_auc_at"]
    out += ["", "Smallest budget at which the mean test AUC reaches VW's with all labels:", ""]
    for name, f in reach.items():
        where = (
            "never (within the budgets)"
            if f is None
            else (f"{100 * f:.0f}% ({d['budgets'][str(f)]} labels)")
        )
        out.append(f"- {name}: {where}")
    for name, err in d.get("errors", {}).items():
        out.append(f"- {name}: did not run ({err})")
    return [*out, ""]


def _best_active(d: dict[str, Any], f: str, metric: str) -> tuple[str, float] | None:
    ours = [
        (name, c[f][metric]["mean"])
        for name, c in d["systems"].items()
        if name not in ("VW passive", "VW --active") and f in c
    ]
    return max(ours, key=lambda nv: nv[1]) if ours else None


def _targets(doc: dict[str, Any]) -> list[str]:
    out = ["## Targets", ""]
    streams = doc.get("online", [])
    if streams:
        wins = [s for s in streams if s.get("default_vs_best_peer", {}).get("mean", 1) < 0]
        sig = [s for s in wins if s["default_vs_best_peer"].get("excludes_zero")]
        out.append(
            f"- Default learner below the best tuned peer on every stream: "
            f"{len(wins)} of {len(streams)} streams "
            f"({'met' if len(wins) == len(streams) else 'not met'}); "
            f"paired 95% CI excluding 0 in our favour on {len(sig)} "
            f"({'met' if len(sig) >= 6 else 'not met'}, target 6 of 7)."
        )
    for d in doc.get("labels", []):
        reach = [f for f in d["reaches_vw_all_labels_auc_at"].values() if f is not None]
        first = min(reach) if reach else None
        ok = first is not None and first <= 1 / 3 + 1e-9
        out.append(
            f"- {d['dataset']}: best active learner reaches VW's all-label AUC at "
            f"{'never' if first is None else f'{100 * first:.0f}% of the labels'} "
            f"({'met' if ok else 'not met'}, target ≤ 33%)."
        )
        for f in TARGET_FRACTIONS:
            if f not in d["budgets"]:
                continue
            parts = []
            for metric in ("accuracy", "auc"):
                best = _best_active(d, f, metric)
                peer = max(
                    d["systems"][s][f][metric]["mean"] for s in ("VW passive", "VW --active")
                )
                if best is not None:
                    verdict = "≥" if best[1] >= peer else "<"
                    parts.append(f"{metric} {best[0]} {best[1]:.3f} {verdict} VW {peer:.3f}")
            out.append(f"  - {100 * float(f):.0f}%: " + "; ".join(parts))
    return [*out, ""]


def markdown(doc: dict[str, Any]) -> str:
    """The results file: summary, targets, per-stream tables, label-efficiency tables."""
    meta = doc["meta"]
    out = [
        "# Quality: our learners against Vowpal Wabbit and River",
        "",
        f"`{meta['command']}` — {meta['date']}, {meta['machine']}; {meta['versions']}.",
        "",
        "Online test-then-train mistake rate, every system on the same event orders "
        f"({meta['runs']} shuffles, mean ± 95% CI, t interval); VW and River tuned on a "
        "separate shuffle (loss/model and step size per layout), our learners on the same "
        "shuffle over their grid (defaults, the main step parameter x0.1 and x10); the "
        f"default learner `{meta['default']}` with its defaults. Paired differences are "
        "per shuffle (negative: we make fewer mistakes).",
        "",
    ]
    if doc.get("online"):
        out += ["## Online mistake rate", "", *_online_summary(doc["online"]), ""]
    out += _targets(doc)
    out += [
        "How these figures compare with the issue's table, and why: "
        "[quality_notes.md](quality_notes.md).",
        "",
    ]
    if doc.get("online"):
        out += ["## Every system, per stream", ""]
        for s in doc["online"]:
            out += _online_detail(s)
    if doc.get("labels"):
        out += ["## Label efficiency", ""]
        for d in doc["labels"]:
            out += _labels_table(d)
    return "\n".join(out)


def plot_online(streams: list[dict[str, Any]], path: Path) -> None:
    """Mistake rate of the default, the best of ours and the best peer per stream (95% CI)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.27
    for k, (key, label) in enumerate(
        (
            ("default", "default (no tuning)"),
            ("best_ours", "best of ours"),
            ("best_peer", "best peer"),
        )
    ):
        means = [100 * s.get(key, {}).get("mean", math.nan) for s in streams]
        cis = [100 * s.get(key, {}).get("ci95", 0.0) for s in streams]
        ax.bar(
            [i + (k - 1) * width for i in range(len(streams))],
            means,
            width,
            yerr=cis,
            label=label,
            capsize=2,
        )
    ax.set_xticks(range(len(streams)), [s["stream"] for s in streams], rotation=20, ha="right")
    ax.set_ylabel("online mistake rate (%)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_labels(datasets: list[dict[str, Any]], path: Path) -> None:
    """Test accuracy and AUC against labels used, one row per dataset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    fig, axes = plt.subplots(len(datasets), 2, figsize=(11, 4 * len(datasets)), squeeze=False)
    for row, d in zip(axes, datasets):
        for ax, metric in zip(row, ("accuracy", "auc")):
            for name, curve in d["systems"].items():
                pts = sorted(curve.values(), key=lambda p: p["labels"]["mean"])
                style = "--" if name.startswith("VW") else "-"
                ax.plot(
                    [p["labels"]["mean"] for p in pts],
                    [p[metric]["mean"] for p in pts],
                    style,
                    marker="o",
                    ms=3,
                    label=name,
                )
            ax.axhline(
                d["vw_all_labels_auc"] if metric == "auc" else math.nan, color="grey", lw=0.8
            )
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("labels used")
            ax.set_ylabel(f"test {metric}")
            ax.set_title(f"{d['dataset']}: {metric}")
        row[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
