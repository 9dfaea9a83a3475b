"""The peers of the throughput benchmark: Vowpal Wabbit and River (optional extras).

* **VW** (``vowpalwabbit``): one model with a task namespace ``t`` and a feature
  namespace ``f`` and quadratic interactions ``-q tf`` (per-task copies of every
  feature plus the shared linear part), logistic loss; in-process
  ``parse -> learn`` of VW text lines, the prediction read back after ``learn``
  (made before the update: progressive validation).
* **River** (``river``): a dict of K ``linear_model.Perceptron``, predict then learn
  on feature dicts.

Converting the stream to VW text lines or River dicts is timed separately and
left out of the learner figures: they measure the learners, not the input conversion.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from bench.perf.throughput_streams import BenchStream

__all__ = [
    "PeerResult",
    "measure_peer",
    "median_entry",
    "peer_versions",
    "river_dicts",
    "row_entries",
    "run_river",
    "run_vw",
    "vw_features",
    "vw_lines",
]


@dataclass
class PeerResult:
    """Events processed, seconds spent learning, mistakes, and the conversion rate."""

    name: str
    events: int
    seconds: float
    mistakes: int
    convert_per_sec: float

    @property
    def per_sec(self) -> float:
        """Learn + progressive predict events per second."""
        return self.events / self.seconds if self.seconds > 0 else float("nan")

    @property
    def mistake_rate(self) -> float:
        """Online mistakes / events."""
        return self.mistakes / self.events if self.events else float("nan")


def peer_versions() -> dict[str, str]:
    """Installed peer versions ("missing" when not installed)."""
    out = {}
    for name in ("vowpalwabbit", "river"):
        try:
            module = __import__(name)
            out[name] = str(getattr(module, "__version__", "?"))
        except ImportError:
            out[name] = "missing"
    return out


def row_entries(X: Any, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Feature ids and values of row ``i`` of ``X`` (a dense array or a CSR matrix)."""
    if sp.issparse(X):
        s, e = X.indptr[i], X.indptr[i + 1]
        return X.indices[s:e], X.data[s:e]
    row = X[i]
    return np.arange(row.shape[0]), row


def vw_lines(stream: BenchStream, start: int, end: int) -> list[str]:
    """VW text lines ``label |t k<task> |f i:v ...`` of events ``start .. end - 1``."""
    lines = []
    for i in range(start, end):
        feats = vw_features(*row_entries(stream.X, i))
        lines.append(f"{int(stream.y[i])} |t k{int(stream.task[i])} |f {feats}")
    return lines


def vw_features(idx: np.ndarray, val: np.ndarray) -> str:
    """The ``id:value`` tokens of one row in VW text format."""
    return " ".join(f"{j}:{v:.6g}" for j, v in zip(idx.tolist(), val.tolist()))


def river_dicts(stream: BenchStream, start: int, end: int) -> list[dict[int, float]]:
    """River feature dicts of events ``start .. end - 1``."""
    out = []
    for i in range(start, end):
        idx, val = row_entries(stream.X, i)
        out.append(dict(zip(idx.tolist(), val.tolist())))
    return out


def _vw_learner() -> Callable[[list[str], np.ndarray], int]:
    import vowpalwabbit

    vw = vowpalwabbit.Workspace("--quiet -q tf --loss_function logistic -b 24")

    def learn(lines: list[str], y: np.ndarray) -> int:
        mistakes = 0
        for line, label in zip(lines, y.tolist()):
            ex = vw.parse(line)
            vw.learn(ex)
            pred = ex.get_simplelabel_prediction()
            vw.finish_example(ex)
            mistakes += (1.0 if pred >= 0.0 else -1.0) != label
        return mistakes

    return learn


def _river_learner(
    stream: BenchStream,
) -> Callable[[list[dict[int, float]], np.ndarray, np.ndarray], int]:
    from river import linear_model

    models: dict[int, Any] = {k: linear_model.Perceptron() for k in range(stream.n_tasks)}

    def learn(rows: list[dict[int, float]], y: np.ndarray, task: np.ndarray) -> int:
        mistakes = 0
        for x, label, t in zip(rows, y.tolist(), task.tolist()):
            model = models[t]
            truth = label > 0
            mistakes += model.predict_one(x) != truth
            model.learn_one(x, truth)
        return mistakes

    return learn


def run_vw(stream: BenchStream, n: int, seconds: float) -> PeerResult:
    """VW with ``-q tf`` on up to ``n`` events or ``seconds`` of learning."""
    learn = _vw_learner()
    return _blocks(
        "VW -q tf (pyvw)", stream, n, seconds, vw_lines, lambda b, s, e: learn(b, stream.y[s:e])
    )


def run_river(stream: BenchStream, n: int, seconds: float) -> PeerResult:
    """A dict of K River Perceptrons on up to ``n`` events or ``seconds`` of learning."""
    learn = _river_learner(stream)
    return _blocks(
        "River Perceptron x K",
        stream,
        n,
        seconds,
        river_dicts,
        lambda b, s, e: learn(b, stream.y[s:e], stream.task[s:e]),
    )


def _blocks(
    name: str,
    stream: BenchStream,
    n: int,
    seconds: float,
    convert: Callable[[BenchStream, int, int], Any],
    learn: Callable[[Any, int, int], int],
) -> PeerResult:
    """Convert then learn blocks of 250 events until ``n`` events or ``seconds`` of learning (CPU time)."""
    spent = converting = 0.0
    done = mistakes = 0
    while done < n and spent < seconds:
        end = min(n, done + 250)
        t0 = time.thread_time()
        block = convert(stream, done, end)
        t1 = time.thread_time()
        mistakes += learn(block, done, end)
        spent += time.thread_time() - t1
        converting += t1 - t0
        done = end
    return PeerResult(
        name, done, spent, mistakes, done / converting if converting else float("nan")
    )


def median_entry(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The repetition with the median events per second (the first failure if all failed)."""
    ok = sorted((e for e in entries if e.get("events")), key=lambda e: e["per_sec"])
    if not ok:
        return entries[0]
    chosen = dict(ok[len(ok) // 2])
    chosen["reps_per_sec"] = [e["per_sec"] for e in ok]
    return chosen


def measure_peer(
    runner: Callable[[BenchStream, int, float], PeerResult],
    stream: BenchStream,
    n: int,
    seconds: float,
    reps: int,
) -> dict[str, Any]:
    """``runner`` (:func:`run_vw` or :func:`run_river`) ``reps`` times; the median repetition."""
    entries = []
    for _ in range(reps):
        res = runner(stream, n, seconds)
        entries.append(
            {
                "name": res.name,
                "events": res.events,
                "seconds": res.seconds,
                "per_sec": res.per_sec,
                "mistakes": res.mistakes,
                "mistake_rate": res.mistake_rate,
                "convert_per_sec": res.convert_per_sec,
            }
        )
    return median_entry(entries)
