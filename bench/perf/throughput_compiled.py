"""The compiled-path table of the throughput benchmark: what one call of a kernel costs.

Every learner runs through ``score_and_learn_many`` (the compiled sequential
test-then-train pass) after :func:`learners.warm_kernels`, in a forked child
(:func:`~bench.perf.throughput_ours.call_isolated`), with the peers (VW, River)
measured on the same streams in the same run. Measured here:

* :func:`measure_blocks` -- events/s of ``score_and_learn_many`` on blocks of a
  given size; with the CPU time spent in the ELLA task refresh (``_refresh``),
  timed by wrapping that method of the instance, and the number of OMTL ``A``
  updates (Eqs. 3.7-3.10), which run inside the compiled pass (their share of the
  time is measured against the same learner with ``A`` fixed,
  :mod:`bench.perf.throughput_compiled_run`);
* :func:`measure_loop` -- a Python loop of ``score_and_learn_one``, of
  ``predict_one`` + ``learn_one``, or the plain numpy loop (predict, then
  ``W += y outer(A^{-1} e_t, x)`` on a mistake: the multitask Perceptron, Eq. 3.3).

In the forked child, before either and before its CPU-time alarm is set, a
throwaway learner makes the same calls on the start of the stream, untimed
(:func:`settle_blocks`, :func:`settle_loop`): a forked child's first writes to
memory it shares with its parent (the heap its batches are allocated from, the
interpreter's objects) each copy a page, a cost of the fork, not of the learner,
that neither a long-running worker nor the peers (measured in the parent) pay: on
the 40,000 events of the sparse stream it took 20-30% off a learner's rate.

A block (or run of blocks, :func:`measure_blocks`) that the alarm interrupts is
not counted, but the CPU time it took is: a learner that cannot finish a block in
its allowance is reported below, never above, its rate.

Every rate is events per second of **CPU time** of the measuring thread
(``time.thread_time``; the learners and the peers run on it, BLAS pinned to one
thread): the host is shared, so wall time would measure the other load, and
``time.process_time`` in a forked child lags by milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import learners
from bench.perf.throughput_ours import TimeUp, learner_params
from bench.perf.throughput_streams import BenchStream

__all__ = ["LOOPS", "measure_blocks", "measure_loop", "settle_blocks", "settle_loop"]

#: The Python loops of :func:`measure_loop`.
LOOPS = ("score_and_learn_one", "predict_one+learn_one", "numpy")
#: Rows per timed chunk of a Python loop (the clock is read once per chunk).
LOOP_CHUNK = 1000


def _make(name: str, stream: BenchStream, n: int, params: dict[str, Any] | None = None) -> Any:
    """A fresh learner with the benchmark's parameters (:func:`learner_params`), ``params``
    overriding them."""
    merged = {**learner_params(name, n), **(params or {})}
    return learners.make(name, n_features=stream.d, n_tasks=stream.n_tasks, seed=0, **merged)


def _time_methods(model: Any) -> dict[str, list[float]]:
    """Wrap the instance's task refresh, if it has one: CPU seconds and calls."""
    spent: dict[str, list[float]] = {}
    for attr, key in (("_refresh", "refresh"),):
        method = getattr(model, attr, None)
        if method is None:
            continue
        cell = spent[key] = [0.0, 0.0]

        def timed(*args: Any, _method: Any = method, _cell: list[float] = cell) -> Any:
            t0 = time.thread_time()
            try:
                return _method(*args)
            finally:
                _cell[0] += time.thread_time() - t0
                _cell[1] += 1

        setattr(model, attr, timed)
    return spent


def _mistakes(scores: np.ndarray, y: np.ndarray) -> int:
    return int(np.sum(np.where(scores >= 0.0, 1.0, -1.0) != y))


def _loop_step(
    name: str, stream: BenchStream, n: int, loop: str
) -> Callable[[np.ndarray, float, int], float]:
    """The step of a fresh learner ``name`` for :data:`LOOPS` entry ``loop``; the ``numpy``
    loop takes the learner's initial ``A^{-1}`` (``Ainv_``) if it has one, else the
    identity (independent Perceptrons)."""
    model = _make(name, stream, n)
    if loop != "numpy":
        return _learner_step(model, loop)
    K = stream.n_tasks
    Ainv = np.array(getattr(model, "Ainv_", np.eye(K)), dtype=float)
    return _numpy_step(np.zeros((K, stream.d)), Ainv)


def settle_blocks(
    name: str,
    stream: BenchStream,
    n: int,
    block: int,
    seconds: float,
    params: dict[str, Any] | None = None,
) -> None:
    """Untimed ``score_and_learn_many`` calls of a throwaway learner on the start of the
    stream (module docstring): blocks of 1, 2, 4, ... rows up to ``block``, until
    ``max(block, 1000)`` rows are done, the stream ends, or ``seconds`` of CPU time
    are spent."""
    if seconds <= 0.0:
        return
    model = _make(name, stream, n, params)
    X, y, task = stream.X, stream.y, stream.task
    goal = min(n, max(block, LOOP_CHUNK))
    done, size = 0, 1
    started = time.thread_time()
    while done < goal and time.thread_time() - started < seconds:
        end = min(goal, done + size)
        model.score_and_learn_many(X[done:end], y[done:end], task[done:end])
        done, size = end, min(block, 2 * size)


def settle_loop(name: str, stream: BenchStream, n: int, loop: str, seconds: float) -> None:
    """:func:`settle_blocks` for :func:`measure_loop`: the loop's calls on the first
    :data:`LOOP_CHUNK` rows with a throwaway learner, for at most ``seconds``."""
    if seconds <= 0.0:
        return
    step = _loop_step(name, stream, n, loop)
    end = min(n, LOOP_CHUNK)
    labels, tasks = stream.y[:end].tolist(), stream.task[:end].tolist()
    started = time.thread_time()
    for x, label, t in zip(list(stream.X[:end]), labels, tasks):
        step(x, label, t)
        if time.thread_time() - started >= seconds:
            break


def measure_blocks(
    name: str,
    stream: BenchStream,
    n: int,
    block: int,
    seconds: float,
    *,
    ramp: bool,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``score_and_learn_many`` over the first ``n`` events in blocks of ``block`` rows, by a
    learner with the benchmark's parameters and ``params`` (:func:`_make`).

    Stops at the end of the stream or once ``seconds`` of CPU time are spent. With
    ``ramp`` the first block has 8 rows and the size doubles up to ``block`` while
    the doubled block is expected to fit in the time left (so a slow learner is
    measured at all), and the clock is read around each block; without, every block
    has ``block`` rows and the clock is read around runs of blocks of at least
    :data:`LOOP_CHUNK` rows, as in :func:`measure_loop` (reading the thread's CPU
    clock takes 0.1-0.7 us, depending on the host: a third of a block of one row).
    Slicing the stream and storing the scores are outside the timed calls.
    """
    model = _make(name, stream, n, params)
    spent_in = _time_methods(model)
    a_updates_before = int(getattr(model, "n_a_updates_", 0))
    X, y, task = stream.X, stream.y, stream.task
    scores = np.empty(n)
    done, spent, size = 0, 0.0, (min(8, block) if ramp else block)
    per_run = 1 if ramp else max(1, LOOP_CHUNK // block)
    started = time.thread_time()
    t0: float | None = None  # the start of the run of blocks under way
    try:
        while done < n and spent < seconds:
            bounds = [
                (a, min(n, a + size)) for a in range(done, min(n, done + per_run * size), size)
            ]
            parts = [(X[a:b], y[a:b], task[a:b]) for a, b in bounds]
            t0 = time.thread_time()
            results = [model.score_and_learn_many(Xb, yb, tb) for Xb, yb, tb in parts]
            took = time.thread_time() - t0
            t0 = None
            spent += took
            for (a, b), result in zip(bounds, results, strict=True):
                scores[a:b] = result
            end = bounds[-1][1]
            if ramp:
                rate = (end - done) / took if took > 0 else float("inf")
                if rate * (seconds - spent) >= 2 * size:
                    size = min(block, 2 * size)
            done = end
    except TimeUp:
        if t0 is not None:  # the run under way: its time counts, its events do not
            spent += time.thread_time() - t0
    out: dict[str, Any] = {
        "events": done,
        "seconds": spent if done else time.thread_time() - started,
        "mistakes": _mistakes(scores[:done], y[:done]),
        "block": block,
    }
    if done and spent > 0:
        out["per_sec"] = done / spent
    for key, (sec, calls) in spent_in.items():
        out[f"{key}_seconds"], out[f"{key}_calls"] = sec, int(calls)
    if hasattr(model, "n_a_updates_"):
        out["a_update_calls"] = int(model.n_a_updates_) - a_updates_before
    return out


def _numpy_step(W: np.ndarray, Ainv: np.ndarray) -> Callable[[np.ndarray, float, int], float]:
    def step(x: np.ndarray, label: float, t: int) -> float:
        score = float(W[t] @ x)
        if (1.0 if score >= 0.0 else -1.0) != label:
            W[...] += label * np.outer(Ainv[:, t], x)
        return score

    return step


def _learner_step(model: Any, loop: str) -> Callable[[np.ndarray, float, int], float]:
    if loop == "score_and_learn_one":
        return model.score_and_learn_one  # type: ignore[no-any-return]

    def step(x: np.ndarray, label: float, t: int) -> float:
        pred = model.predict_one(x, t)
        model.learn_one(x, label, t)
        return 1.0 if pred > 0 else -1.0

    return step


def measure_loop(
    name: str, stream: BenchStream, n: int, loop: str, seconds: float
) -> dict[str, Any]:
    """A Python loop over dense rows (one of :data:`LOOPS`) for learner ``name``.

    The ``numpy`` loop uses the learner's initial ``A^{-1}`` (``Ainv_``) if it has
    one, else the identity (independent Perceptrons).
    """
    step = _loop_step(name, stream, n, loop)
    X, labels, tasks = stream.X, stream.y.tolist(), stream.task.tolist()
    scores = np.empty(n)
    done, spent = 0, 0.0
    t0: float | None = None  # the start of the chunk under way
    try:
        while done < n and spent < seconds:
            end = min(n, done + LOOP_CHUNK)
            rows = list(X[done:end])
            out = scores[done:end]
            t0 = time.thread_time()
            for k, (x, label, t) in enumerate(zip(rows, labels[done:end], tasks[done:end])):
                out[k] = step(x, label, t)
            spent += time.thread_time() - t0
            t0 = None
            done = end
    except TimeUp:
        if t0 is not None:  # the chunk under way: its time counts, its events do not
            spent += time.thread_time() - t0
    result: dict[str, Any] = {
        "events": done,
        "seconds": spent,
        "mistakes": _mistakes(scores[:done], stream.y[:done]),
    }
    if done and spent > 0:
        result["per_sec"] = done / spent
    return result
