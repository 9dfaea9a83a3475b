"""Terminal tables for evaluation documents (the JSON documents of the protocols)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["format_comparison", "format_document", "headline_metrics"]

#: Metrics shown first, in this order, when a document has them.
ORDER = ("accuracy", "auc", "mistakes", "mistake_rate", "queries", "rmse", "train_rmse")
#: Largest K for which matrices are printed (larger ones are in the JSON only).
MAX_MATRIX = 12


def _metric_names(metrics: dict[str, Any]) -> list[str]:
    names = [k[: -len("_mean")] for k in metrics if k.endswith("_mean") and k != "neg_rmse_mean"]
    return sorted(names, key=lambda m: (ORDER.index(m) if m in ORDER else len(ORDER), m))


def headline_metrics(doc: dict[str, Any]) -> list[str]:
    """The metric names of ``doc`` in display order."""
    return _metric_names(doc["metrics"])


def _fmt(value: Any, metric: str = "") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if metric in ("mistakes", "queries") or (isinstance(value, float) and abs(value) >= 1000):
        return f"{value:.1f}"
    return f"{value:.4f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    line = "  ".join(
        f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (h, w) in enumerate(zip(header, widths))
    )
    out = [line, "-" * len(line)]
    for row in rows:
        out.append(
            "  ".join(
                f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(row, widths))
            )
        )
    return out


def _matrix(title: str, matrix: Any) -> list[str]:
    if not matrix or len(matrix) > MAX_MATRIX:
        return [] if not matrix else [f"{title}: {len(matrix)} x {len(matrix)} (see --json)"]
    lines = [f"{title}:"]
    for row in matrix:
        lines.append("  " + " ".join(f"{_fmt(v):>8}" for v in row))
    return lines


def format_document(doc: dict[str, Any]) -> str:
    """The readable report of one evaluation."""
    lines = [
        f"dataset {doc['dataset']}  learner {doc['learner']}  protocol {doc['protocol']}  "
        f"runs {doc['runs']}  seed {doc.get('seed')}"
        + (f"  budget {doc['budget']}" if doc.get("budget") is not None else ""),
    ]
    if doc.get("params"):
        lines.append(f"params {doc['params']}")
    if doc.get("auto_params"):
        lines.append(f"set for this dataset: {doc['auto_params']}")
    names = headline_metrics(doc)
    m = doc["metrics"]
    rows = [
        [n, _fmt(m.get(f"{n}_mean"), n), _fmt(m.get(f"{n}_std"), n), _fmt(m.get(f"{n}_ci95"), n)]
        for n in names
    ]
    lines += ["", *_table(["metric", "mean", "std", "95% CI +-"], rows)]
    per_task = doc.get("per_task") or []
    if per_task:
        rows = [[str(e["task"])] + [_fmt(e.get(f"{n}_mean"), n) for n in names] for e in per_task]
        lines += ["", "per task (means over runs):", *_table(["task", *names], rows)]
    lines += ["", *_matrix("relation matrix (mean over runs)", doc.get("relation_matrix"))]
    lines += _matrix("weight correlation (mean over runs)", doc.get("weight_correlation"))
    if "outlier_tasks" in doc:
        lines.append(f"outlier tasks (last run): {doc['outlier_tasks']}")
    return "\n".join(line for line in lines).rstrip() + "\n"


def format_comparison(docs: Sequence[dict[str, Any]]) -> str:
    """One table with a row per learner: mean +- 95% CI of every metric."""
    if not docs:
        return ""
    names = list(dict.fromkeys(n for d in docs for n in headline_metrics(d)))
    rows = []
    for d in docs:
        m = d["metrics"]
        rows.append(
            [d["learner"]]
            + [
                f"{_fmt(m.get(f'{n}_mean'), n)} +- {_fmt(m.get(f'{n}_ci95'), n)}"
                if f"{n}_mean" in m
                else "-"
                for n in names
            ]
        )
    first = docs[0]
    head = (
        f"dataset {first['dataset']}  protocol {first['protocol']}  runs {first['runs']}  "
        f"seed {first.get('seed')} (same shuffles for every learner); mean +- 95% CI"
    )
    return "\n".join([head, "", *_table(["learner", *names], rows)]) + "\n"
