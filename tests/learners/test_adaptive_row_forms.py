"""A row gives the adaptive learners the same numbers in every form it can arrive in.

The service's worker learns an event alone or inside a group of events, and a replay
after a crash may group the same events differently; a sparse event that lists every
feature is made dense by ``learners.inputs.as_vector``. So a row must give the same
scores and state bit for bit as a dense batch, a float32 dense batch, a CSR batch, one-row
CSR batches, and (for the learners whose per-event call is their batch path) one event
at a time. Rows of 40 features: wide enough that the kernels' sums run in SIMD lanes, so
that a full CSR row read in the sparse form would add in another order than the same row
read in the dense form (docs/algorithms.md Sec. 11.4).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.checks.common import assert_states_equal

D, N, K = 40, 300, 3

LEARNERS = [
    ("adaptive-logistic", {}),
    ("adaptive-hinge", {"outlier_gamma": 0.05}),
    ("adaptive-arow", {}),
    ("adaptive-logistic", {"append_bias": False}),
    ("adaptive", {}),
    ("amlc-adaptive", {}),
    ("peer-share-adaptive", {}),
    ("peer-adaptive", {}),
]


def _stream(zeros: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((N, D))
    X[rng.random(X.shape) < zeros] = 0.0
    y = np.where(rng.random(N) < 0.5, 1.0, -1.0)
    return X, y, rng.integers(0, K, N)


def _learn(name: str, params: dict[str, Any], X: Any, y: np.ndarray, t: np.ndarray, how: str):
    model = learners.make(name, n_features=D, n_tasks=K, **params)
    if how == "batch":
        scores = model.score_and_learn_many(X, y, t)
    elif how == "rows":
        scores = np.concatenate(
            [model.score_and_learn_many(X[i : i + 1], y[i : i + 1], t[i : i + 1]) for i in range(N)]
        )
    else:
        scores = np.array(
            [model.score_and_learn_one(X[i], float(y[i]), int(t[i])) for i in range(N)]
        )
    return scores, model.state_dict()


@pytest.mark.parametrize("zeros", [0.0, 0.05])
@pytest.mark.parametrize(("name", "params"), LEARNERS)
def test_every_form_of_a_row_gives_the_same_numbers(
    name: str, params: dict[str, Any], zeros: float
) -> None:
    """With ``zeros = 0`` every row stores every feature (a full CSR row takes the dense
    form, as the dense row does); with ``zeros = 0.05`` about one row in eight does."""
    X, y, t = _stream(zeros)
    X32 = X.astype(np.float32)
    want, want_state = _learn(name, params, X, y, t, "batch")
    forms: list[tuple[str, Any, str]] = [
        ("dense rows", X, "rows"),
        ("CSR batch", sp.csr_matrix(X), "batch"),
        ("CSR rows", sp.csr_matrix(X), "rows"),
    ]
    if learners.make(name, n_features=D, n_tasks=K, **params).per_event_is_batch():
        forms += [("dense events", X, "one"), ("CSR events", sp.csr_matrix(X), "one")]
    for label, rows, how in forms:
        got, state = _learn(name, params, rows, y, t, how)
        assert np.array_equal(got, want), f"{label}: scores differ from the dense batch's"
        assert_states_equal(state, want_state, label)
    # float32 rows: the same numbers as the float64 rows of the same values
    want32, state32 = _learn(name, params, X32.astype(np.float64), y, t, "batch")
    for how in ("batch", "rows"):
        got, state = _learn(name, params, X32, y, t, how)
        assert np.array_equal(got, want32), f"float32 {how}: scores differ"
        assert_states_equal(state, state32, f"float32 {how}")
