"""The compiled entries of single events of AMLC and PEER (``learners.amlc.event_kernels``)
and of their rules over an adaptive base (``learners.active.adaptive_event_kernels``): a
dense row goes to the batch passes without the Python-built one-row batch, and gives the
numbers of that general path, and of a batch, bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.checks.common import assert_states_equal
from tests.learners.batch_checks import dense_row_forms, scaled_rows

D, N, K = 12, 300, 4

LEARNERS = [
    ("amlc", {}),
    ("amlc", {"faithful": "paper", "share_test": "prediction", "b": 0.5}),
    ("amlc", {"C": 0.0, "append_bias": False, "l2_normalize": False, "budget": 40}),
    ("peer", {}),
    ("peer", {"bq": 1.0, "append_bias": False, "l2_normalize": False}),
    ("peer-share", {"budget": 40}),
    ("amlc-adaptive", {}),
    ("amlc-adaptive", {"base": "adaptive", "base_params": {"etas": "1.0", "couplings": "0.5,2"}}),
    ("peer-adaptive", {"base": "adaptive-arow", "append_bias": False}),
    ("peer-share-adaptive", {"budget": 40}),
]
#: The rules over an adaptive base.
ADAPTIVE_RULES = ("amlc-adaptive", "peer-adaptive", "peer-share-adaptive")


def _stream(zeros: float, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return scaled_rows(N, D, K, zeros, seed)


def _events(model: Any, rows: list[Any], y: np.ndarray, t: np.ndarray) -> list[Any]:
    """Each event scored and asked about (``decide_and_query``, which draws from the
    generator), scored again (``decision_one``), then learned (``score_and_learn_one``)."""
    out: list[Any] = []
    for x, label, task in zip(rows, y.tolist(), t.tolist(), strict=True):
        out.append(model.decide_and_query(x, task, probability=True))
        out.append(model.decision_one(x, task))
        out.append(model.score_and_learn_one(x, label, task))
    return out


@pytest.mark.parametrize("zeros", [0.0, 0.2])
@pytest.mark.parametrize(("name", "params"), LEARNERS)
def test_the_entries_give_the_numbers_of_the_general_path(
    name: str, params: dict[str, Any], zeros: float
) -> None:
    """Rows as float64 arrays (the entries), as float32, read-only and strided arrays (the
    entries on a float64 copy, or the general path) and as lists (the general path:
    validation, canonical vector, a one-row batch): the same scores, queries, draws and
    states, bit for bit."""
    X, y, t = _stream(zeros)
    general = learners.make(name, n_features=D, n_tasks=K, seed=1, **params)
    want = _events(general, [x.tolist() for x in X], y, t)
    for label, rows in dense_row_forms(X):
        model = learners.make(name, n_features=D, n_tasks=K, seed=1, **params)
        assert _events(model, rows, y, t) == want, label
        assert_states_equal(model.state_dict(), general.state_dict(), label)
    X32 = X.astype(np.float32)
    general32 = learners.make(name, n_features=D, n_tasks=K, seed=1, **params)
    model32 = learners.make(name, n_features=D, n_tasks=K, seed=1, **params)
    assert _events(model32, list(X32), y, t) == _events(general32, [x.tolist() for x in X32], y, t)
    assert_states_equal(model32.state_dict(), general32.state_dict(), "float32")


@pytest.mark.parametrize(("name", "params"), LEARNERS)
def test_a_batch_of_one_dense_row_gives_the_numbers_of_one_batch(
    name: str, params: dict[str, Any]
) -> None:
    """The service's worker learns an event alone as a batch of one dense row (read-only
    float32 from the log): row by row, such batches give the scores and state of one batch
    of every row, rows with zeros included."""
    X, y, t = _stream(0.2, seed=4)
    whole = learners.make(name, n_features=D, n_tasks=K, **params)
    want = whole.score_and_learn_many(X, y, t).tolist()
    rows = learners.make(name, n_features=D, n_tasks=K, **params)
    got = [
        float(rows.score_and_learn_many(X[i : i + 1], y[i : i + 1], t[i : i + 1])[0])
        for i in range(N)
    ]
    assert got == want
    assert_states_equal(rows.state_dict(), whole.state_dict(), "float64 rows")
    X32 = X.astype(np.float32)
    X32.flags.writeable = False
    whole32 = learners.make(name, n_features=D, n_tasks=K, **params)
    want32 = whole32.score_and_learn_many(X32, y, t).tolist()
    rows32 = learners.make(name, n_features=D, n_tasks=K, **params)
    for i in range(N):
        label, task = np.full(1, y[i]), np.full(1, t[i], dtype=np.int64)
        assert float(rows32.score_and_learn_many(X32[i : i + 1], label, task)[0]) == want32[i]
    assert_states_equal(rows32.state_dict(), whole32.state_dict(), "float32 rows")


@pytest.mark.parametrize("name", ["amlc", "peer", "peer-share", *ADAPTIVE_RULES])
def test_dense_rows_take_the_entries_and_rows_with_zeros_the_general_path(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which path a row takes: the one-row pass that Python builds runs only for rows the
    entries refuse (per event, a row with a zero entry: its canonical vector is sparse)."""
    X, y, t = _stream(0.0, seed=5)
    model = learners.make(name, n_features=D, n_tasks=K)
    model.score_and_learn_many(X[:100], y[:100], t[:100])
    built = []
    run_kernel = model._run_kernel

    def counted(call: Any) -> tuple[int, int]:
        built.append(call.dense)
        return run_kernel(call)

    monkeypatch.setattr(model, "_run_kernel", counted)
    read_only = X.copy()
    read_only.flags.writeable = False
    strided = np.asfortranarray(X)
    for i in range(100, 120):
        for row in (X[i], read_only[i], strided[i]):  # the latter two as float64 copies
            model.decision_one(row, int(t[i]))
        model.score_and_learn_one(X[i], float(y[i]), int(t[i]))
        model.score_and_learn_one(read_only[i], float(y[i]), int(t[i]))
        model.score_and_learn_many(X[i : i + 1], y[i : i + 1], t[i : i + 1])
        model.score_and_learn_many(X[i : i + 1].astype(np.float32), y[i : i + 1], t[i : i + 1])
    assert built == []
    x = X[120].copy()
    x[3] = 0.0
    model.decision_one(x, 0)
    model.score_and_learn_one(x, 1.0, 0)
    sparse = [False, False]
    assert built == sparse  # the canonical (sparse) row
    model.score_and_learn_many(x[None, :], np.ones(1), np.zeros(1, dtype=np.int64))
    assert built == sparse  # a dense batch holds it dense: the entry takes it
    model.score_and_learn_many(X[121:123], y[121:123], t[121:123])
    assert built == [*sparse, True]  # two rows: the batch pass


@pytest.mark.parametrize("name", ["amlc", "peer-share", "amlc-adaptive", "peer-share-adaptive"])
def test_bad_rows_get_the_general_errors_and_change_nothing(name: str) -> None:
    X, y, t = _stream(0.0, seed=6)
    model = learners.make(name, n_features=D, n_tasks=K)
    model.score_and_learn_many(X[:50], y[:50], t[:50])
    before = model.state_dict()
    bad = X[60].copy()
    bad[3] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        model.score_and_learn_one(bad, 1.0, 0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        model.decision_one(np.where(bad == np.inf, np.nan, bad), 0)
    for rows, labels, tasks, message in [
        (bad[None, :], y[60:61], t[60:61], "NaN or infinite"),
        (X[60:61], np.array([0.5]), t[60:61], "labels y must be -1 or \\+1"),
        (X[60:61], y[60:61], np.array([K]), "unknown task"),
        (X[60:61, :-1], y[60:61], t[60:61], "12 columns"),
    ]:
        with pytest.raises(ValueError, match=message):
            model.score_and_learn_many(rows, labels, tasks)
    assert_states_equal(model.state_dict(), before, "after bad rows")
    # the entry itself refuses them, having changed nothing
    assert np.isnan(model._dense_event(bad, 1.0, 0, True, True))
    zero = X[61].copy()
    zero[0] = 0.0
    assert np.isnan(model._dense_event(zero, 1.0, 0, True, False))
    assert_states_equal(model.state_dict(), before, "after refused rows")
    assert not np.isnan(model._dense_event(zero, 1.0, 0, True, True))


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("amlc", {"append_bias": False, "l2_normalize": False}),
        ("peer-share", {"append_bias": False, "l2_normalize": False}),
    ],
)
def test_a_row_the_entry_took_and_scored_nan_is_not_learned_twice(
    name: str, params: dict[str, Any]
) -> None:
    """Rows near the largest double overflow the weights, and later scores come out NaN
    (inf - inf): such a NaN is the score of a row the entry learned, unlike the NaN with
    which an entry refuses a row, and the row is not handed to the general path again."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((40, D)) * 1e307
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    t = rng.integers(0, K, 40)
    entries = learners.make(name, n_features=D, n_tasks=K, **params)
    general = learners.make(name, n_features=D, n_tasks=K, **params)
    with np.errstate(over="ignore", invalid="ignore"):
        got = [entries.score_and_learn_one(x, a, b) for x, a, b in zip(X, y.tolist(), t.tolist())]
        want = [
            general.score_and_learn_one(x.tolist(), a, b)
            for x, a, b in zip(X, y.tolist(), t.tolist())
        ]
        rows = learners.make(name, n_features=D, n_tasks=K, **params)
        one_row = [
            float(rows.score_and_learn_many(X[i : i + 1], y[i : i + 1], t[i : i + 1])[0])
            for i in range(40)
        ]
        whole = learners.make(name, n_features=D, n_tasks=K, **params)
        batch = whole.score_and_learn_many(X, y, t)
    assert np.isnan(got).sum() > 10
    assert np.array_equal(got, want, equal_nan=True)
    assert_states_equal(entries.state_dict(), general.state_dict(), "per event")
    assert np.array_equal(one_row, batch, equal_nan=True)
    assert_states_equal(rows.state_dict(), whole.state_dict(), "one-row batches")


@pytest.mark.parametrize("zeros", [0.0, 0.2])
@pytest.mark.parametrize(("name", "params"), LEARNERS)
def test_the_active_loop_of_single_events_gives_the_numbers_of_one_batch(
    name: str, params: dict[str, Any], zeros: float
) -> None:
    """What the worker does with unlabelled events, then the answers (``decide_and_query``,
    then ``learn_one`` where a label was asked), gives the scores, queries, draws and
    state of ``query_and_learn_many`` on every row at once, bit for bit: a PEER round
    draws its second uniform only where the first asked, and where the peers answer the
    task learns their label inside the query. With ``zeros`` every row has a zero entry
    and goes the general path per event (its canonical vector is sparse), so its batch
    is CSR."""
    X, y, t = _stream(zeros, seed=9)
    if zeros:
        X[np.arange(N), np.arange(N) % D] = 0.0
    whole = learners.make(name, n_features=D, n_tasks=K, seed=2, **params)
    scores, asked = whole.query_and_learn_many(sp.csr_matrix(X) if zeros else X, y, t)
    for rows in (list(X), [x.tolist() for x in X]):
        model = learners.make(name, n_features=D, n_tasks=K, seed=2, **params)
        got_scores, got_asked = [], []
        for x, label, task in zip(rows, y.tolist(), t.tolist(), strict=True):
            score, _, ask = model.decide_and_query(x, task)
            got_scores.append(score)
            got_asked.append(ask)
            if ask:
                model.learn_one(x, label, task)
        assert got_scores == scores.tolist()
        assert got_asked == asked.tolist()
        assert_states_equal(model.state_dict(), whole.state_dict(), "single events")
    assert 0 < sum(got_asked) < N
    # the second draw of a PEER query both asked the oracle and let the peers answer
    if name.startswith("peer"):
        taught = learners.make(name, n_features=D, n_tasks=K, seed=2, **params)
        taught.score_and_learn_many(X, y, t)  # peers that disagree with 0
        oracle = peers = 0
        for x, task in zip(X, t.tolist(), strict=True):
            before = taught.task_weights()
            if taught.decide_and_query(x, task)[2]:
                oracle += 1
            else:
                peers += not np.array_equal(before, taught.task_weights())
        assert oracle > 0 and peers > 0, (oracle, peers)


def test_a_peer_with_its_own_decision_one_keeps_the_numpy_query() -> None:
    """A subclass that overrides ``decision_one`` draws against its own scores: its
    ``query_one`` and ``decide_and_query`` take the numpy round, and agree."""
    from learners.amlc.peer import PeerLearning

    class Shifted(PeerLearning):
        def decision_one(self, x: Any, task: int) -> float:
            return super().decision_one(x, task) + 1.0

    X, y, t = _stream(0.0, seed=10)
    a = Shifted(n_features=D, n_tasks=K, seed=4)
    b = Shifted(n_features=D, n_tasks=K, seed=4)
    for x, label, task in zip(X, y.tolist(), t.tolist(), strict=True):
        plain = PeerLearning.decision_one(b, x, task)
        expected = (a.decision_one(x, task), None, a.query_one(x, task))
        assert b.decide_and_query(x, task) == expected
        assert expected[0] == plain + 1.0
        a.learn_one(x, label, task)
        b.learn_one(x, label, task)
    assert_states_equal(a.state_dict(), b.state_dict(), "overridden decision_one")


@pytest.mark.parametrize("name", ["peer", "amlc-adaptive"])
def test_a_subclass_with_its_own_query_rule_is_followed_per_event(name: str) -> None:
    """A subclass with its own numpy ``_query`` (ask always, no draw): the per-event
    queries follow it rather than the compiled pass's draws."""
    parent = type(learners.make(name, n_features=D, n_tasks=K))

    class Eager(parent):  # type: ignore[misc, valid-type]
        def _query(self, x: Any, task: int) -> bool:
            return True

    X, y, t = _stream(0.0, seed=11)
    model = Eager(n_features=D, n_tasks=K, seed=4)
    for x, label, task in zip(X[:60], y[:60].tolist(), t[:60].tolist(), strict=True):
        assert model.query_one(x, task) is True
        assert model.decide_and_query(x, task)[2] is True
        model.learn_one(x, label, task)
    assert model.n_queries_ == 120
