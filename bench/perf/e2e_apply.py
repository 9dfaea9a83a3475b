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

It then times entries of 100 *unlabelled* events for the learners of :data:`ACTIVE`
(each event scored, a query decision drawn, a label request written where the learner
asks), on a new model (an active rule asks about most events) and on one that has
learned :data:`TRAINED` labelled events of the stream first (it asks at its working
rate), with the label requests per event, beside a loop of the learner's own
``decide_and_query`` over the same rows on a new model; and entries of
one event each, every one in a millisecond of its own (what events posted one at a
time give: no group to apply in one call), labelled and unlabelled, for the learners
of :data:`SINGLES` (``--singles``; ``--only-singles`` times those entries alone).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.perf import throughput_streams
from service.store.codec import encode_batch, encode_event
from service.store.models import ModelConfig, initial_snapshot
from service.worker.apply import Applier
from service.worker.outbox import Outbox
from service.worker.state import ModelState
from service.worker.worker import READ_BYTES, READ_EVENTS

__all__ = ["main", "measure"]

K, D, READ_COUNT = 100, 100, 500
#: A server time after every entry id here: what lets the worker apply a last group.
_END = 10**15


def _flat(fields: dict[str, bytes | str]) -> list[bytes]:
    out: list[bytes] = []
    for key, value in fields.items():
        out += [key.encode(), value if isinstance(value, bytes) else value.encode()]
    return out


#: Learners whose unlabelled events :func:`main` times (defaults otherwise): active rules
#: with one draw against their score (one ``decide_and_query_many`` pass per run of rows),
#: PEER's rules (row by row) and a passive learner (every row asked).
ACTIVE = (
    "selective-sampling",
    "selective-sampling:adaptive-logistic",
    "amlc",
    "peer-share",
    "amlc-adaptive",
    "peer-share-adaptive",
    "cmtl",
)
#: Labelled events applied before the unlabelled ones of a trained model.
TRAINED = 20_000


#: Learners whose single-event entries :func:`main` times: the default learner of a new
#: model and two of the compiled linear family.
SINGLES = ("cmtl", "pa-global", "adaptive-auto")


def measure(
    n_events: int,
    per_entry: int,
    reps: int = 3,
    learner: str = "cmtl",
    labelled: bool = True,
    trained: int = 0,
) -> tuple[float, float]:
    """Median events per CPU second of ``Applier.apply`` over the whole stream, and the
    label requests per event of the last run.

    ``labelled=False``: the same rows without labels (each one a prediction and a
    query decision, and a label request where the learner asks). ``trained``: that many
    labelled events of the same stream, in entries of ``per_entry``, are applied first,
    off the clock, so that an active learner asks at the rate of a model that has learned.
    """
    stream = throughput_streams.make_stream(K, D, trained + n_events, seed=0)
    names = [f"t{k}" for k in stream.task]

    def entry(i: int, a: int, with_labels: bool) -> list[Any]:
        rows = slice(a, a + per_entry)
        y = stream.y[rows] if with_labels else [None] * (rows.stop - a)
        return [f"{1000 + i}-0".encode(), _flat(encode_batch(names[rows], stream.X[rows], y))]

    starts = range(0, trained + n_events, per_entry)
    warm = [entry(i, a, True) for i, a in enumerate(starts) if a < trained]
    entries = [entry(i, a, labelled) for i, a in enumerate(starts) if a >= trained]
    entry_bytes = sum(map(len, entries[0][1]))
    read = max(1, min(READ_COUNT, READ_EVENTS // per_entry, READ_BYTES // entry_bytes))
    return _median_rate(entries, read, n_events, learner, reps, warm)


def measure_singles(
    n_events: int, reps: int = 3, learner: str = "cmtl", labelled: bool = True
) -> float:
    """Median events per CPU second of ``Applier.apply`` over entries of one binary event
    each, entry ``i`` with id ``<1000 + i>-0``: no two in the same millisecond, so each
    is applied by the learner's per-event calls."""
    stream = throughput_streams.make_stream(K, D, n_events, seed=0)
    entries: list[list[Any]] = [
        [
            f"{1000 + i}-0".encode(),
            _flat(
                encode_event(
                    f"t{stream.task[i]}",
                    stream.X[i],
                    float(stream.y[i]) if labelled else None,
                    binary=True,
                )
            ),
        ]
        for i in range(n_events)
    ]
    return _median_rate(entries, READ_COUNT, n_events, learner, reps)[0]


def _median_rate(
    entries: list[list[Any]],
    read: int,
    n_events: int,
    learner: str,
    reps: int,
    warm: list[list[Any]] | None = None,
) -> tuple[float, float]:
    """Median events per CPU second of a fresh model's ``Applier.apply`` over ``entries``,
    ``read`` entries per call, after one run that is not kept, and the label requests per
    event of the last run. The label requests each call emits are dropped after it, as
    the worker writes them out after each read. ``warm``: entries applied first, off the
    clock."""
    config = _config(learner)
    rates = []
    asked = 0.0
    for _ in range(reps + 1):  # the first run warms caches and is not kept
        state = ModelState("m", initial_snapshot("m", config))
        outbox = Outbox()
        applier = Applier(state, outbox, lambda entry_id: None)
        for s in range(0, len(warm or []), read):
            applier.apply((warm or [])[s : s + read], horizon_ms=_END)
        outbox.clear()
        before = dict(state.totals)
        started = time.thread_time()
        held: list[Any] = []  # a group of labelled single events that may still grow
        for s in range(0, len(entries), read):
            held = applier.apply(held + entries[s : s + read], horizon_ms=None)
            outbox.requests.clear()
        applier.apply(held, horizon_ms=_END)  # as the worker does once the log is read
        rates.append(n_events / (time.thread_time() - started))
        assert state.totals["events"] - before["events"] == n_events
        asked = (state.totals["label_requests"] - before["label_requests"]) / n_events
    kept = sorted(rates[1:])
    return kept[len(kept) // 2], asked


def _config(spec: str) -> ModelConfig:
    """``name`` or ``selective-sampling:<base>`` on K tasks of d features."""
    name, _, base = spec.partition(":")
    params = {"base": base} if base else {}
    return ModelConfig(learner=name, params=params, n_features=D, tasks=[f"t{k}" for k in range(K)])


def decide_loop(spec: str, n_events: int) -> float:
    """Events per CPU second of the learner's own ``decide_and_query`` over the same
    rows (float32, as the worker reads them): what the worker's apply adds to is this."""
    stream = throughput_streams.make_stream(K, D, n_events, seed=0)
    config = _config(spec)
    learner = ModelState("m", initial_snapshot("m", config)).learner
    rows = list(stream.X.astype("float32"))
    tasks = stream.task.tolist()
    started = time.thread_time()
    for x, t in zip(rows, tasks, strict=True):
        learner.decide_and_query(x, t, probability=True)
    return n_events / (time.thread_time() - started)


def main(argv: list[str] | None = None) -> int:
    """Print events per CPU second for entries of 100 and of 10,000 events."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--unlabelled", type=int, default=20_000, help="events per active model")
    parser.add_argument(
        "--singles",
        default=",".join(SINGLES),
        help="comma-separated learners whose entries of one event are timed",
    )
    parser.add_argument(
        "--only-singles", action="store_true", help="time the entries of one event alone"
    )
    args = parser.parse_args(argv)
    n = min(args.events, args.unlabelled)
    if args.only_singles:
        _singles(args.singles.split(","), n)
        return 0
    for per_entry in (100, 10_000):
        rate = measure(args.events, per_entry)[0]
        print(f"{per_entry:>6} events per entry: {rate / 1e6:.2f} M events per CPU second")
    print(
        f"unlabelled events, entries of 100, K = {K}, d = {D} (events per CPU second; label"
        f" requests per event), of a new model and after {TRAINED:,} labelled events:"
    )
    for spec in ACTIVE:
        fresh, fresh_asked = measure(n, 100, learner=spec, labelled=False)
        rate, asked = measure(n, 100, learner=spec, labelled=False, trained=TRAINED)
        alone = decide_loop(spec, n)
        print(
            f"  {spec:<38} new {fresh / 1e3:7.1f} k ({fresh_asked:.2f})"
            f"   trained {rate / 1e3:7.1f} k ({asked:.2f})"
            f"   decide_and_query alone (new) {alone / 1e3:7.1f} k"
        )
    _singles(args.singles.split(","), n)
    return 0


def _singles(specs: list[str], n: int) -> None:
    """Print events per CPU second of entries of one event, labelled and unlabelled."""
    print(f"entries of one event, each in its own millisecond, K = {K}, d = {D}:")
    for spec in specs:
        labelled = measure_singles(n, learner=spec)
        unlabelled = measure_singles(n, learner=spec, labelled=False)
        print(
            f"  {spec:<38} labelled {labelled / 1e3:7.1f} k   unlabelled {unlabelled / 1e3:7.1f} k"
        )


if __name__ == "__main__":
    raise SystemExit(main())
