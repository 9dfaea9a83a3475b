"""Our learners on a benchmark stream: events per second and online mistakes.

Two paths, each measured until the stream or the allowance of CPU time
(``time.thread_time``: the host is shared, wall time measures the other load) ends:

* ``batch``: ``score_and_learn_many`` on blocks of :data:`BATCH` rows (test-then-
  train, equal to the per-event loop by the learner contract); passive learners;
* ``event``: ``decision_one`` then ``query_one`` and, when it says so,
  ``learn_one``, one event at a time (every learner; the only path for active
  ones). Sparse rows are given as ``(indices, values)`` pairs.

Each measurement runs in a forked child with an address-space limit, so a
learner whose state does not fit (e.g. a d x d matrix at d = 100,000) is
reported as such instead of taking the machine down. Results come back as JSON
through a pipe.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

import learners
from bench.perf.throughput_streams import BenchStream
from evaluation.common import kind_switch

__all__ = ["BATCH", "TimeUp", "call_isolated", "learner_params", "run_isolated", "run_learner"]

#: Rows per ``score_and_learn_many`` call.
BATCH = 128
#: CPU seconds past the allowance after which a measurement is cut short (partial result kept).
ALARM_GRACE = 3
#: Address-space limit of one measurement.
MEMORY_LIMIT = 6 * 1024**3


#: Rounds of priming for learners with an EPOCH (OMTL): short, so that the timed
#: part of every stream measures the learner with its task-relationship updates on.
PRIMING_ROUNDS = 1000


def learner_params(name: str, n: int) -> dict[str, Any]:
    """Default parameters, made to learn classification, with priming over the first rounds.

    Learners with ``epoch_rounds`` (the OMTL family) update their interaction matrix
    from round :data:`PRIMING_ROUNDS` on (or ``n`` if the stream is shorter); others with
    only ``expected_rounds`` get the stream length.
    """
    cls = learners.get(name)
    names = {p.name for p in cls.params}
    params: dict[str, Any] = {}
    if cls.kind == "both":
        params.update(kind_switch(cls, {}, "classification") or {})
    if "epoch_rounds" in names:
        params["epoch_rounds"] = min(PRIMING_ROUNDS, n)
    elif "expected_rounds" in names:
        params["expected_rounds"] = n
    return params


def run_learner(
    name: str, stream: BenchStream, n: int, seconds: float, path: str, prefixes: list[int]
) -> dict[str, Any]:
    """Measure one learner on one path; see the module docstring."""
    model = learners.make(
        name, n_features=stream.d, n_tasks=stream.n_tasks, seed=0, **learner_params(name, n)
    )
    if path == "batch" and model.is_active:
        return {"skipped": "active learner: per-event path only"}
    X, y, task = stream.X, stream.y, stream.task
    scores = np.empty(n)
    tally = {"done": 0, "queries": 0, "spent": 0.0}
    started = time.thread_time()
    try:
        if path == "batch":
            _batch_path(model, X, y, task, scores, n, seconds, tally)
        else:
            _event_path(model, X, y, task, scores, n, seconds, tally)
    except TimeUp:
        pass  # the block under way when the alarm rang is not counted
    done = int(tally["done"])
    wrong = np.cumsum(np.where(scores[:done] >= 0.0, 1.0, -1.0) != y[:done])
    return {
        "events": done,
        # with nothing done, the CPU time the first block took before the alarm
        "seconds": tally["spent"] if done else time.thread_time() - started,
        "mistakes": int(wrong[-1]) if done else 0,
        "queries": int(tally["queries"]),
        "mistakes_at": {str(p): int(wrong[p - 1]) for p in prefixes if 0 < p <= done},
    }


class TimeUp(Exception):
    """Raised by the alarm that bounds one measurement."""


def _batch_path(
    model: Any,
    X: Any,
    y: np.ndarray,
    task: np.ndarray,
    scores: np.ndarray,
    n: int,
    seconds: float,
    tally: dict[str, float],
) -> None:
    size = 8  # small first blocks, so that a slow learner is measured at all
    while tally["done"] < n and tally["spent"] < seconds:
        start = int(tally["done"])
        end = min(n, start + size)
        t0 = time.thread_time()
        scores[start:end] = model.score_and_learn_many(X[start:end], y[start:end], task[start:end])
        tally["spent"] += time.thread_time() - t0
        tally["done"] = tally["queries"] = end
        size = min(BATCH, size * 2)


def _event_path(
    model: Any,
    X: Any,
    y: np.ndarray,
    task: np.ndarray,
    scores: np.ndarray,
    n: int,
    seconds: float,
    tally: dict[str, float],
) -> None:
    sparse = sp.issparse(X)
    block = 200
    while tally["done"] < n and tally["spent"] < seconds:
        start = int(tally["done"])
        end = min(n, start + block)
        rows: list[Any]
        if sparse:
            rows = [
                (X.indices[X.indptr[i] : X.indptr[i + 1]], X.data[X.indptr[i] : X.indptr[i + 1]])
                for i in range(start, end)
            ]
        else:
            rows = list(X[start:end])
        labels, tasks = y[start:end].tolist(), task[start:end].tolist()
        t0 = time.thread_time()
        for k, (x, label, t) in enumerate(zip(rows, labels, tasks)):
            scores[start + k] = model.decision_one(x, t)
            if model.query_one(x, t):
                model.learn_one(x, label, t)
                tally["queries"] += 1
            tally["done"] = start + k + 1
            tally["spent"] += time.thread_time() - t0
            t0 = time.thread_time()


def _ring(signum: int, frame: Any) -> None:
    raise TimeUp


def run_isolated(
    name: str,
    stream: BenchStream,
    n: int,
    seconds: float,
    path: str,
    prefixes: list[int],
    timeout: float,
) -> dict[str, Any]:
    """:func:`run_learner` in a forked child (see :func:`call_isolated`)."""
    return call_isolated(
        lambda: run_learner(name, stream, n, seconds, path, prefixes), seconds, timeout
    )


def call_isolated(
    measure: Callable[[], dict[str, Any]],
    seconds: float,
    timeout: float,
    prepare: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """``measure()`` in a forked child: memory limit, a CPU-time alarm at ``seconds`` plus
    :data:`ALARM_GRACE` (raising :class:`TimeUp` inside it), and a wall-clock ``timeout``.
    ``prepare()``, if given, runs in the child before the alarm is set (an untimed
    warm-up that bounds itself; the wall-clock ``timeout`` covers it too).

    The child inherits the parent's compiled kernels (warm them before forking).
    Returns the JSON-able dict ``measure`` returned, or ``{"error": ...}``.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
            if prepare is not None:
                prepare()
            signal.signal(signal.SIGPROF, _ring)
            signal.setitimer(signal.ITIMER_PROF, seconds + ALARM_GRACE)
            out = measure()
            signal.setitimer(signal.ITIMER_PROF, 0)
        except MemoryError:
            out = {"error": f"out of memory (> {MEMORY_LIMIT // 1024**3} GB)"}
        except TimeUp:
            out = {"error": f"over the time limit ({seconds + ALARM_GRACE:g} CPU s)"}
        except Exception as exc:
            out = {"error": f"{type(exc).__name__}: {exc}"[:200]}
        data = json.dumps(out).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view) :]
        os._exit(0)
    os.close(write_fd)
    chunks = []
    deadline = time.monotonic() + timeout
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([read_fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return {"error": f"no result within {timeout:.0f} s"}
    if not chunks:
        return {"error": f"measurement process died (status {status})"}
    result: dict[str, Any] = json.loads(b"".join(chunks))
    return result
