"""Outlier-task alerts for learners that report outlier tasks (the ROM family).

Where the learner declares ``reports_outliers`` (``outlier_tasks()`` and
``outlier_scores()``, see :class:`learners.OutlierReporter`), the
worker compares the set of outlier tasks after each applied read with the
previous one and, on a change, writes alerts to ``omtl:{m}:alerts`` (kind
``outlier`` or ``inlier``) and sets the gauge ``omtl_outlier_task``.
"""

from __future__ import annotations

import time

from learners import outlier_reporter
from service import metrics as m
from service.worker.state import ModelState

__all__ = ["outlier_alerts"]


def outlier_alerts(state: ModelState) -> list[dict[str, str]]:
    """Alert entries for the tasks whose outlier status changed since the last call."""
    reporter = outlier_reporter(state.learner)
    if reporter is None:
        return []
    current = {int(t) for t in reporter.outlier_tasks()}
    if current == state.outliers:
        return []
    scores = reporter.outlier_scores()
    ts = str(int(time.time() * 1000))
    alerts = []
    for t in sorted(current ^ state.outliers):
        name = state.task_names[t] if t < len(state.task_names) else f"#{t}"
        kind = "outlier" if t in current else "inlier"
        score = repr(float(scores[t]))
        alerts.append({"task": name, "kind": kind, "score": score, "ts": ts})
        label = m.task_label(name, state.metric_tasks)
        m.OUTLIER_TASK.labels(state.name, label).set(1 if t in current else 0)
    state.outliers = current
    return alerts
