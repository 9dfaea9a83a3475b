"""The worker's Prometheus metrics and the counts of one run.

:func:`publish` adds what each owned model did since the last call to the
counters, sets the gauges and measures each log's lag (entries added but not
yet applied) in one pipeline; :class:`RunResult` sums a run's work over the
models it let go.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from service import metrics as m
from service.store import Store, StoreReplyError, keys
from service.worker.owned import Owned
from service.worker.state import ModelState

__all__ = ["PUBLISH_EVERY", "PublishedMarks", "RunResult", "publish"]

#: How often (seconds) metrics are published and the log lag measured.
PUBLISH_EVERY = 0.5
_RUN_COUNTS = (
    "entries",
    "events",
    "labelled_events",
    "labels_applied",
    "label_requests",
    "dead_letters",
)


@dataclass
class RunResult:
    """What one :meth:`Worker.run` did (counts over all models, this run only)."""

    entries: int = 0
    events: int = 0
    labelled_events: int = 0
    labels_applied: int = 0
    label_requests: int = 0
    dead_letters: int = 0
    snapshots: int = 0
    seconds: float = 0.0
    #: CPU time of this process during the run (steadier than ``seconds`` on a busy machine)
    cpu_seconds: float = 0.0
    models: list[str] = field(default_factory=list)

    @property
    def events_per_second(self) -> float:
        """Events applied per second of the run."""
        return self.events / self.seconds if self.seconds > 0 else 0.0

    def count(self, owned: Owned, upto: Mapping[str, int] | None = None) -> None:
        """Add a model's work since the last count (once, when it is let go), up to its
        totals now or ``upto`` (the totals of a snapshot it is reloaded from)."""
        now = owned.state.totals if upto is None else upto
        for name in _RUN_COUNTS:
            setattr(self, name, getattr(self, name) + now[name] - owned.start_totals[name])
        owned.start_totals = dict(now)
        if owned.state.name not in self.models:
            self.models.append(owned.state.name)


@dataclass(frozen=True)
class PublishedMarks:
    """How far a model's counters were published, kept by the worker when it lets the
    model go: after a reload, the replayed entries count again only beyond these."""

    per_task: dict[str, list[int]]
    dead: int
    entries: int

    @classmethod
    def of(cls, state: ModelState) -> PublishedMarks:
        """The marks of ``state`` now."""
        per_task = {name: list(values) for name, values in state.published.items()}
        return cls(per_task, state.published_dead, state.published_entries)

    def restore(self, state: ModelState) -> None:
        """Continue publishing ``state`` (freshly loaded) from these marks."""
        for name, values in self.per_task.items():
            state.published[name] = list(values)
        state.published_dead = max(state.published_dead, self.dead)
        state.published_entries = max(state.published_entries, self.entries)


def _log_lags(r: Store, names: list[str]) -> list[Any]:
    if not names:
        return []
    with r.pipeline(transaction=False) as p:
        for name in names:
            p.xinfo_stream(keys.log_key(name))
        try:
            return p.execute(raise_on_error=False)
        except StoreReplyError:
            return []


def publish(r: Store, owned: Mapping[str, Owned], task_label_cap: int) -> None:
    """Publish every owned model's counters, snapshot gauges and log lag."""
    lags = _log_lags(r, list(owned))
    for i, (name, model) in enumerate(list(owned.items())):
        st = model.state
        counters = st.counters()
        for cname, metric in (
            ("events", m.EVENTS),
            ("labels", m.LABELS),
            ("queries", m.LABEL_REQUESTS),
            ("mistakes", m.ONLINE_MISTAKES),
        ):
            published = st.published[cname]
            values = counters[cname].tolist()
            published.extend([0] * (len(values) - len(published)))
            for t, value in enumerate(values):
                delta = value - published[t]
                if delta > 0:
                    label = m.task_label(
                        st.task_names[t] if t < len(st.task_names) else f"#{t}",
                        st.metric_tasks,
                        task_label_cap,
                    )
                    metric.labels(name, label).inc(delta)
                    published[t] = value
        dead = st.totals["dead_letters"] - st.published_dead
        if dead > 0:
            m.DEAD_LETTERS.labels(name).inc(dead)
            st.published_dead = st.totals["dead_letters"]
        entries = st.totals["entries"] - st.published_entries
        if entries > 0:
            m.WORKER_ENTRIES.labels(name).inc(entries)
            st.published_entries = st.totals["entries"]
        m.SNAPSHOT_AGE.labels(name).set(max(0.0, time.time() - st.snapshot_created))
        m.SNAPSHOT_VERSION.labels(name).set(st.version)
        info = lags[i] if i < len(lags) else None
        if isinstance(info, dict):
            added = info.get("entries-added", info.get(b"entries-added"))
            if added is not None:
                model.lag = max(0, int(added) - st.totals["entries"])
                m.LOG_LAG.labels(name).set(model.lag)
