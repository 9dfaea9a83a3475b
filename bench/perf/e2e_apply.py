"""The worker's apply step alone, in process: events per CPU second by entry size.

``python -m bench.perf.e2e_apply`` encodes the perf-anchor stream (K = 100,
d = 100, every event labelled, cmtl) as batch entries of 100 and of 10,000
events, exactly as Redis returns them to the worker (``[id, [field, value,
...]]``), and times :meth:`service.worker.apply.Applier.apply` on reads of the
worker's size (``read_count`` entries, fewer for entries of many events or bytes:
:data:`service.worker.worker.READ_EVENTS`, :data:`~service.worker.worker.READ_BYTES`):
fast reading, task mapping, merged
learner calls, counters; no Redis round trip. It isolates what
``python -m bench.e2e``'s drain adds on top of the transport
(docs/architecture.md, "Applying log entries").
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.perf import throughput_streams
from service.store.codec import encode_batch
from service.store.models import ModelConfig, initial_snapshot
from service.worker.apply import Applier
from service.worker.outbox import Outbox
from service.worker.state import ModelState
from service.worker.worker import READ_BYTES, READ_EVENTS

__all__ = ["main", "measure"]

K, D, READ_COUNT = 100, 100, 500


def _flat(fields: dict[str, bytes | str]) -> list[bytes]:
    out: list[bytes] = []
    for key, value in fields.items():
        out += [key.encode(), value if isinstance(value, bytes) else value.encode()]
    return out


def measure(n_events: int, per_entry: int, reps: int = 3) -> float:
    """Median events per CPU second of ``Applier.apply`` over the whole stream."""
    stream = throughput_streams.make_stream(K, D, n_events, seed=0)
    names = [f"t{k}" for k in stream.task]
    entries: list[list[Any]] = [
        [
            f"{1000 + i}-0".encode(),
            _flat(
                encode_batch(
                    names[a : a + per_entry],
                    stream.X[a : a + per_entry],
                    stream.y[a : a + per_entry],
                )
            ),
        ]
        for i, a in enumerate(range(0, n_events, per_entry))
    ]
    entry_bytes = sum(map(len, entries[0][1]))
    read = max(1, min(READ_COUNT, READ_EVENTS // per_entry, READ_BYTES // entry_bytes))
    config = ModelConfig(learner="cmtl", n_features=D, tasks=[f"t{k}" for k in range(K)])
    rates = []
    for _ in range(reps + 1):  # the first run warms caches and is not kept
        state = ModelState("m", initial_snapshot("m", config))
        applier = Applier(state, Outbox(), lambda entry_id: None)
        started = time.thread_time()
        for s in range(0, len(entries), read):
            applier.apply(entries[s : s + read], horizon_ms=None)
        rates.append(n_events / (time.thread_time() - started))
        assert state.totals["events"] == n_events
    kept = sorted(rates[1:])
    return kept[len(kept) // 2]


def main(argv: list[str] | None = None) -> int:
    """Print events per CPU second for entries of 100 and of 10,000 events."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args(argv)
    for per_entry in (100, 10_000):
        rate = measure(args.events, per_entry)
        print(f"{per_entry:>6} events per entry: {rate / 1e6:.2f} M events per CPU second")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
