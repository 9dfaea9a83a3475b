"""Compiled kernels against their numpy reference: the shared comparison harness.

A learner that runs on compiled kernels names its slow numpy implementation in
``reference_class`` (same hyperparameters, same state layout). The harness
runs both over the same random stream and demands

* identical predictions (``SGN`` of every test-then-train score, ties +1) and
  so identical mistakes,
* scores equal to ``rtol`` (relative to the largest score of the stream),
* every float array of ``state_dict`` equal to ``rtol`` (relative to the
  array's largest entry), every other entry equal (but the learner name: a
  reference may serve several registered names),

for the kernel learner driven three ways: event by event
(``score_and_learn_one``) and through ``score_and_learn_many`` in blocks of
several sizes, on dense rows and on sparse rows (CSR, about 30% non-zeros).
The reference always runs event by event through ``decision_one`` /
``learn_one``. :func:`compare_with_reference` is the harness;
:func:`check_kernel_matches_reference` is the conformance check that applies
it to every learner with a ``reference_class``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from learners.base import Learner
from learners.checks.streams import Stream, related_tasks

__all__ = [
    "BLOCKS",
    "RTOL",
    "assert_states_close",
    "check_kernel_matches_reference",
    "compare_with_reference",
    "noisy_stream",
    "reference_of",
]

#: Relative tolerance of scores and state arrays.
RTOL = 1e-12
#: Block sizes of the batch runs (``0`` stands for the whole stream in one call).
BLOCKS = (1, 7, 64, 0)


def noisy_stream(learner: Learner, n: int, seed: int, *, flip: float = 0.1) -> Stream:
    """A related-task classification stream with a fraction ``flip`` of labels flipped."""
    stream = related_tasks(n=n, n_tasks=learner.n_tasks, n_features=learner.n_features, seed=seed)
    rng = np.random.default_rng(seed + 1)
    y = np.where(rng.random(n) < flip, -stream.y, stream.y)
    return Stream(stream.X, y, stream.task)


def reference_of(learner: Learner) -> Learner:
    """A fresh reference learner with ``learner``'s shape, seed and hyperparameters."""
    cls = type(learner).reference_class
    if cls is None:
        raise ValueError(f"{type(learner).__name__} names no reference_class")
    return cls(
        n_features=learner.n_features, n_tasks=learner.n_tasks, seed=learner.seed, **learner.hyper
    )


def _rows(X: np.ndarray | sp.csr_matrix) -> list[Any]:
    if isinstance(X, np.ndarray):
        return list(X)
    return [X[i] for i in range(X.shape[0])]


def _reference_run(learner: Learner, X: np.ndarray | sp.csr_matrix, stream: Stream) -> np.ndarray:
    scores = np.empty(len(stream))
    for i, (x, y, t) in enumerate(
        zip(_rows(X), stream.y.tolist(), stream.task.tolist(), strict=True)
    ):
        scores[i] = learner.decision_one(x, t)
        learner.learn_one(x, y, t)
    return scores


def _event_run(learner: Learner, X: np.ndarray | sp.csr_matrix, stream: Stream) -> np.ndarray:
    rows = zip(_rows(X), stream.y.tolist(), stream.task.tolist(), strict=True)
    return np.array([learner.score_and_learn_one(x, y, t) for x, y, t in rows])


def _batch_run(
    learner: Learner, X: np.ndarray | sp.csr_matrix, stream: Stream, block: int
) -> np.ndarray:
    n = len(stream)
    step = block or n
    parts = [
        learner.score_and_learn_many(
            X[i : i + step], stream.y[i : i + step], stream.task[i : i + step]
        )
        for i in range(0, n, step)
    ]
    return np.concatenate(parts)


def assert_states_close(
    got: Mapping[str, Any], want: Mapping[str, Any], what: str, rtol: float = RTOL
) -> None:
    """Same keys; float arrays equal to ``rtol`` of their largest entry; the rest equal."""
    assert set(got) == set(want), f"{what}: keys differ: {sorted(set(got) ^ set(want))}"
    for key, w in want.items():
        g = got[key]
        if isinstance(w, np.ndarray) and w.dtype.kind == "f":
            g = np.asarray(g)
            assert g.shape == w.shape, f"{what}: {key} shape {g.shape} != {w.shape}"
            scale = float(np.abs(w).max()) if w.size else 0.0
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=f"{what}: {key}")
        elif isinstance(w, np.ndarray):
            np.testing.assert_array_equal(np.asarray(g), w, err_msg=f"{what}: {key}")
        elif isinstance(w, float) and isinstance(g, float):
            assert abs(g - w) <= rtol * max(abs(w), 1.0), f"{what}: {key}: {g!r} vs {w!r}"
        else:
            assert g == w, f"{what}: {key}: {g!r} vs {w!r}"


def _assert_same_run(got: np.ndarray, want: np.ndarray, stream: Stream, what: str) -> None:
    assert np.array_equal(got >= 0.0, want >= 0.0), (
        f"{what}: predictions differ at rows {np.flatnonzero((got >= 0.0) != (want >= 0.0))[:10]}"
    )
    scale = float(np.abs(want).max()) if want.size else 0.0
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * scale, err_msg=f"{what}: scores")
    mistakes = int(((want >= 0.0) != (stream.y > 0.0)).sum())
    assert 0 < mistakes < len(stream), f"{what}: a stream with {mistakes} mistakes tests nothing"


def compare_with_reference(
    make_kernel: Any,
    make_reference: Any,
    stream: Stream,
    *,
    sparse: bool,
    blocks: tuple[int, ...] = BLOCKS,
) -> None:
    """Run the kernel learner (events, then each block size) and the reference; compare.

    ``make_kernel`` and ``make_reference`` build fresh learners; ``stream`` is a dense
    classification stream, used as CSR rows (its zeros dropped) when ``sparse``.
    """
    X: np.ndarray | sp.csr_matrix = sp.csr_matrix(stream.X) if sparse else stream.X
    form = "sparse" if sparse else "dense"
    reference = make_reference()
    want = _reference_run(reference, X, stream)
    want_state = reference.state_dict()
    runs = [("events", lambda learner: _event_run(learner, X, stream))]
    for block in blocks:
        runs.append((f"blocks of {block or len(stream)}", _block_runner(X, stream, block)))
    for label, run in runs:
        learner = make_kernel()
        got = run(learner)
        _assert_same_run(got, want, stream, f"{form} {label}")
        got_state = {**learner.state_dict(), "learner": want_state["learner"]}
        assert_states_close(got_state, want_state, f"{form} {label}")


def _block_runner(X: np.ndarray | sp.csr_matrix, stream: Stream, block: int) -> Any:
    return lambda learner: _batch_run(learner, X, stream, block)


def check_kernel_matches_reference(make: Any) -> None:
    """A compiled learner equals its ``reference_class`` on dense and sparse random streams."""
    learner = make()
    if type(learner).reference_class is None or learner.label_kind != "classification":
        return
    stream = noisy_stream(learner, n=600, seed=12)
    # Make about 70% of the coordinates zero, so the sparse rows are really sparse.
    mask = np.random.default_rng(13).random(stream.X.shape) < 0.3
    sparse_stream = Stream(stream.X * mask, stream.y, stream.task)
    compare_with_reference(make, lambda: reference_of(learner), stream, sparse=False)
    compare_with_reference(make, lambda: reference_of(learner), sparse_stream, sparse=True)
