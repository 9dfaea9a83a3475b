"""The event lane of the adaptive learners' per-event calls (``AdaptiveLearner.event_lane``,
``learners.adaptive.event_kernels``): a dense row goes to the compiled passes without the
Python-built one-row batch, and gives the numbers of that general path bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.active.kernels import vector_rows
from learners.adaptive.learners import one_event
from learners.checks.common import assert_states_equal
from learners.inputs import as_vector
from tests.learners.batch_checks import dense_row_forms, scaled_rows

D, N, K = 12, 400, 3

LEARNERS = [
    ("adaptive-logistic", {}),
    ("adaptive-hinge", {"outlier_gamma": 0.05}),
    ("adaptive-arow", {"log_scale": True}),
    ("adaptive-logistic", {"append_bias": False, "l2_normalize": True}),
    ("adaptive", {}),
    ("adaptive", {"memory_order": "features"}),
    ("adaptive-auto", {}),
    ("adaptive-auto", {"views": "raw,log,l2,log-l2"}),
    ("adaptive-auto", {"views": "log,log-quad"}),
]


def _stream(zeros: float, seed: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return scaled_rows(N, D, K, zeros, seed)


def _events(model: Any, rows: list[Any], y: np.ndarray, t: np.ndarray) -> list[float]:
    """Each event scored (``decision_one``), then learned (``score_and_learn_one``)."""
    out = []
    for x, label, task in zip(rows, y.tolist(), t.tolist(), strict=True):
        out.append(model.decision_one(x, task))
        out.append(model.score_and_learn_one(x, label, task))
    return out


def _one_row_batches(model: Any, X: Any, y: np.ndarray, t: np.ndarray) -> list[float]:
    """Each row learned as a batch of one row (``score_and_learn_many``); their scores. A
    list of one-vector lists gives each its own batch."""
    return [
        float(
            model.score_and_learn_many(
                X[i] if type(X) is list else X[i : i + 1], y[i : i + 1], t[i : i + 1]
            )[0]
        )
        for i in range(y.shape[0])
    ]


def _csr(vectors: list[list[Any]]) -> sp.csr_matrix:
    """The CSR batch of one-vector lists: each vector's canonical row."""
    return sp.vstack([sp.csr_matrix(v[0].dense()) for v in vectors], format="csr")


@pytest.mark.parametrize("zeros", [0.0, 0.1, 0.6])
@pytest.mark.parametrize(("name", "params"), LEARNERS)
def test_the_lane_gives_the_numbers_of_the_general_path(
    name: str, params: dict[str, Any], zeros: float
) -> None:
    """Rows as float64 arrays (the lane), as float32, read-only and strided arrays (the
    lane, on a float64 copy), as CSR rows (the lane, dense or sparse as their canonical
    vector) and as lists (the general path: validation, canonical vector, a one-row
    batch): the same scores, decisions and states, bit for bit."""
    X, y, t = _stream(zeros)
    general = learners.make(name, n_features=D, n_tasks=K, **params)
    want = _events(general, [x.tolist() for x in X], y, t)
    for label, rows in dense_row_forms(X):
        model = learners.make(name, n_features=D, n_tasks=K, **params)
        assert _events(model, rows, y, t) == want, label
        assert_states_equal(model.state_dict(), general.state_dict(), label)
    csr = sp.csr_matrix(X)
    model = learners.make(name, n_features=D, n_tasks=K, **params)
    assert _events(model, [csr[i] for i in range(N)], y, t) == want, "CSR rows"
    assert_states_equal(model.state_dict(), general.state_dict(), "CSR rows")
    X32 = X.astype(np.float32)
    general32 = learners.make(name, n_features=D, n_tasks=K, **params)
    model32 = learners.make(name, n_features=D, n_tasks=K, **params)
    assert _events(model32, list(X32), y, t) == _events(general32, [x.tolist() for x in X32], y, t)
    assert_states_equal(model32.state_dict(), general32.state_dict(), "float32")


@pytest.mark.parametrize(
    ("name", "params"), [("adaptive-logistic", {}), ("adaptive", {}), ("adaptive-auto", {})]
)
def test_the_lane_takes_dense_rows_and_leaves_everything_else(
    name: str, params: dict[str, Any]
) -> None:
    model = learners.make(name, n_features=D, n_tasks=K, **params)
    lane = model.views_[0] if name == "adaptive-auto" else model
    bias = model._bias
    x = np.linspace(-1.0, 2.0, D)
    before = model.state_dict()
    assert lane.event_lane(x, 1, None, bias, False, False) is not None
    assert lane.event_lane(x, np.int64(2), None, bias, False, False) is not None
    assert lane.event_lane(x.astype(np.float32), 1, None, bias, False, False) is not None
    for refused in [
        (x.tolist(), 1, None),  # not an array
        (x[:-1], 1, None),  # wrong length
        (x.astype(np.int64), 1, None),  # not floating point
        (x, K, None),  # no such task
        (x, 1.0, None),  # a task that is not an integer
        (x, 0, 0.5),  # not a label
        (np.where(x > 1.5, np.nan, x), 0, 1.0),  # not finite
        (np.where(x > 1.5, np.inf, x), 0, None),
    ]:
        assert lane.event_lane(*refused, bias, False, False) is None, refused
    assert lane.event_lane(np.where(x > 1.5, 0.0, x), 0, 1.0, bias, True, False) is None
    assert_states_equal(model.state_dict(), before, "after refused rows")


@pytest.mark.parametrize("name", ["adaptive-logistic", "adaptive", "adaptive-auto"])
def test_a_bad_batch_of_one_row_gets_the_batch_errors_and_changes_nothing(name: str) -> None:
    """Bad single events are the conformance suite's (``check_bad_input_raises_and_changes_
    nothing``); here the batches of one row that the lane takes too."""
    X, y, t = _stream(0.0)
    model = learners.make(name, n_features=D, n_tasks=K)
    model.score_and_learn_many(X[:50], y[:50], t[:50])
    before = model.state_dict()
    bad = X[60:61].copy()
    bad[0, 3] = np.inf
    for rows, labels, tasks, message in [
        (bad, y[60:61], t[60:61], "NaN or infinite"),
        (X[60:61], np.array([0.5]), t[60:61], "labels y must be -1 or \\+1"),
        (X[60:61], y[60:61], np.array([K]), "unknown task"),
    ]:
        with pytest.raises(ValueError, match=message):
            model.score_and_learn_many(rows, labels, tasks)
    assert_states_equal(model.state_dict(), before, "after bad batches")


@pytest.mark.parametrize(("name", "params"), LEARNERS)
def test_a_batch_of_one_dense_row_takes_the_lane_with_the_numbers_of_a_batch(
    name: str, params: dict[str, Any]
) -> None:
    """The service's worker learns an event alone as a batch of one dense row: row by row,
    such batches give the numbers of one batch of every row, zeros and unit-length views
    included (where the per-event calls read a row with zeros in its sparse form)."""
    X, y, t = _stream(0.1, seed=6)
    X[: N // 2, : D // 2] = 0.0  # rows in their sparse form too
    vectors = [[as_vector(x, D)] for x in X]  # batches of one canonical vector (the worker's)
    for form in (X, sp.csr_matrix(X), vectors):  # with l2_normalize dense and CSR norms differ
        whole = learners.make(name, n_features=D, n_tasks=K, **params)
        want = whole.score_and_learn_many(form if form is not vectors else _csr(vectors), y, t)
        rows = learners.make(name, n_features=D, n_tasks=K, **params)
        assert _one_row_batches(rows, form, y, t) == want.tolist()
        assert_states_equal(rows.state_dict(), whole.state_dict(), "rows")
    assert one_event(X[:1], y[:1], t[:1]) is not None
    assert one_event(sp.csr_matrix(X[:1]), y[:1], t[:1]) is not None
    assert one_event([as_vector(X[0], D)], y[:1], t[:1]) is not None
    assert one_event([X[0]], y[:1], t[:1]) is None
    assert one_event(X[:2], y[:2], t[:2]) is None
    assert one_event(X[:1], y[:1].astype(np.int64), t[:1]) is None


def test_a_row_with_zeros_takes_the_lane_as_a_batch_with_unit_length_views() -> None:
    auto = learners.make("adaptive-auto", n_features=D, n_tasks=K, views="log,log-l2")
    x = np.linspace(-1.0, 2.0, D)
    x[2] = 0.0
    before = auto.state_dict()
    assert auto._views_lane(x, 1, 1.0) is None  # per event: the canonical (sparse) row
    assert_states_equal(auto.state_dict(), before, "after the refused row")
    assert auto._views_lane(x, 1, 1.0, as_batch=True) is not None


@pytest.mark.parametrize(("name", "params"), LEARNERS[:6])
def test_the_hooks_on_a_prepared_row_take_the_lane_with_the_numbers_of_a_one_row_pass(
    name: str, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules over an adaptive base (selective sampling, AMLC, PEER) call the base's
    hooks on rows they prepared: a dense one takes the lane, with the numbers of the
    compiled pass on a one-row batch, which rows with zeros still take."""
    X, y, t = _stream(0.1, seed=7)
    lane = learners.make(name, n_features=D, n_tasks=K, **params)
    passes = learners.make(name, n_features=D, n_tasks=K, **params)
    one_row_pass = lane._event_pass

    def sparse_rows_only(rows: Any, label: float | None, task: int) -> float:
        assert not rows[0], "a dense prepared row took the one-row pass, not the lane"
        return one_row_pass(rows, label, task)

    monkeypatch.setattr(lane, "_event_pass", sparse_rows_only)
    for x, label, task in zip(X, y.tolist(), t.tolist(), strict=True):
        v = lane._prepare(x)
        rows = vector_rows(v, False, False)
        assert lane._decision(v, task) == passes._event_pass(rows, None, task)
        assert lane._score_and_learn_row(v, label, task) == passes._event_pass(rows, label, task)
    assert_states_equal(lane.state_dict(), passes.state_dict(), "hooks")
    dense = lane._prepare(np.linspace(-1.0, 2.0, D))
    assert dense.idx is None
    assert lane.event_lane(dense.val, 0, None, False, False, False) == lane._decision(dense, 0)


@pytest.mark.parametrize("name", ["adaptive-logistic", "adaptive-auto"])
def test_a_csr_row_storing_zeros_as_a_batch_of_one_row_keeps_the_batch_numbers(name: str) -> None:
    """A batch drops a CSR row's stored zeros (its canonical form), and so does the lane,
    through the row's canonical vector: the same unit length, to the bit."""
    params = {"l2_normalize": True} if name == "adaptive-logistic" else {"views": "log,log-l2"}
    rng = np.random.default_rng(8)
    d = 300  # wide enough for the kernels' sums to run in SIMD lanes
    X = rng.standard_normal((N, d)) * rng.lognormal(0.0, 1.0, size=(N, 1))
    y = np.where(X[:, 0] - X[:, 1] > 0, 1.0, -1.0)
    t = rng.integers(0, K, N)
    stored = sp.csr_matrix(X)
    stored.data[::3] = 0.0  # stored, not dropped
    whole = learners.make(name, n_features=d, n_tasks=K, **params)
    want = whole.score_and_learn_many(stored, y, t)
    rows = learners.make(name, n_features=d, n_tasks=K, **params)
    assert _one_row_batches(rows, stored, y, t) == want.tolist()
    assert_states_equal(rows.state_dict(), whole.state_dict(), "rows storing zeros")
