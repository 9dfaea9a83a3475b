"""The conformance checks (see :mod:`learners.checks`)."""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from learners.base import (
    RELATION_KINDS,
    Learner,
    outlier_reporter,
    query_probability_reporter,
)
from learners.checks.kernels import check_kernel_matches_reference
from learners.checks.streams import Stream, related_tasks

__all__ = ["ALL_CHECKS", "Factory", "yield_checks"]

Factory = Callable[[], Learner]
Check = Callable[[Factory], None]

N_FEATURES = 10
N_TASKS = 4


def _stream(learner: Learner, n: int = 3000, seed: int = 0) -> Stream:
    return related_tasks(
        n=n,
        n_tasks=learner.n_tasks,
        n_features=learner.n_features,
        kind=learner.label_kind,
        noise=0.0,
        seed=seed,
    )


def assert_states_equal(a: Mapping[str, Any], b: Mapping[str, Any], what: str = "state") -> None:
    """Two ``state_dict`` outputs are identical, bit for bit."""
    assert set(a) == set(b), f"{what}: keys differ: {sorted(set(a) ^ set(b))}"
    for key in a:
        va, vb = a[key], b[key]
        if isinstance(va, np.ndarray) or isinstance(vb, np.ndarray):
            va, vb = np.asarray(va), np.asarray(vb)
            assert va.shape == vb.shape, f"{what}: {key} shapes differ: {va.shape} vs {vb.shape}"
            assert np.array_equal(va, vb, equal_nan=va.dtype.kind == "f"), f"{what}: {key} differs"
        else:
            assert va == vb, f"{what}: {key} differs: {va!r} vs {vb!r}"


def _run(learner: Learner, stream: Stream, *, active: bool = True) -> list[tuple[float, bool]]:
    """Feed ``stream``: score, ask ``query_one``, learn when it says yes. Returns (score, asked)."""
    out = []
    for x, y, t in stream:
        score = learner.decision_one(x, t)
        asked = learner.query_one(x, t) if active else True
        if asked:
            learner.learn_one(x, y, t)
        out.append((score, asked))
    return out


# ------------------------------------------------------------------ checks
def check_info(make: Factory) -> None:
    """The registry entry is complete: name, summary, paper, described parameters, docstring."""
    learner = make()
    info = type(learner).info()
    assert info.name and info.summary and info.paper, "name, summary and paper must be set"
    assert info.kind in ("classification", "regression", "both")
    for p in info.params:
        assert p.description.strip(), f"parameter {p.name!r} has no description"
    assert type(learner).__doc__, "the learner class needs a docstring"
    json.dumps(info.as_dict())


def check_learns_related_stream(make: Factory) -> None:
    """On a separable related-task stream the late mistake rate is low (or the late error small)."""
    learner = make()
    stream = _stream(learner, n=3000)
    scores = np.array([s for s, _ in _run(learner, stream, active=False)])
    third = len(stream) // 3
    if learner.label_kind == "classification":
        wrong = (scores >= 0) != (stream.y > 0)
        early, late = wrong[:third].mean(), wrong[-third:].mean()
        assert late <= 0.2, f"late mistake rate {late:.3f} > 0.2"
        assert late < early or late < 0.05, f"no learning: early {early:.3f}, late {late:.3f}"
    else:
        err = (scores - stream.y) ** 2
        base = float(np.mean(stream.y[-third:] ** 2))
        late = float(err[-third:].mean())
        assert late <= 0.5 * base, (
            f"late squared error {late:.4f} not below half the target power {base:.4f}"
        )


def check_decision_is_pure(make: Factory) -> None:
    """decision_one and predict_one change nothing, and leave x untouched."""
    learner = make()
    stream = _stream(learner, n=300)
    _run(learner, stream)
    before = learner.state_dict()
    x = stream.X[0].copy()
    for t in range(learner.n_tasks):
        learner.decision_one(x, t)
        learner.predict_one(x, t)
        learner.relation_matrix()
    assert np.array_equal(x, stream.X[0]), "x was modified"
    assert_states_equal(before, learner.state_dict(), "after decision_one/predict_one")


def check_state_round_trip(make: Factory) -> None:
    """A restored learner predicts bit for bit the same and continues identically (RNG included)."""
    learner = make()
    stream = _stream(learner, n=1200, seed=1)
    head = Stream(stream.X[:600], stream.y[:600], stream.task[:600])
    tail = Stream(stream.X[600:], stream.y[600:], stream.task[600:])
    _run(learner, head)
    state = learner.state_dict()
    restored = type(learner).from_state_dict(_through_npz(state))
    assert_states_equal(state, restored.state_dict(), "restored")
    a, b = _run(learner, tail), _run(restored, tail)
    assert a == b, "restored learner diverged"
    assert_states_equal(learner.state_dict(), restored.state_dict(), "after continuing")


def _through_npz(state: Mapping[str, Any]) -> dict[str, Any]:
    """Serialise as the service does (JSON header + npz arrays, no pickle) and read back."""
    arrays = {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
    header = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
    for k, v in arrays.items():
        assert v.dtype.kind in "biuf", f"state array {k} has non-numeric dtype {v.dtype}"
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    loaded = np.load(io.BytesIO(buf.getvalue()), allow_pickle=False)
    out: dict[str, Any] = json.loads(json.dumps(header))
    out.update({k: loaded[k] for k in loaded.files})
    return out


def check_add_task(make: Factory) -> None:
    """add_task mid-stream returns the new index; the new task learns; state still round-trips."""
    learner = make()
    stream = _stream(learner, n=400, seed=2)
    _run(learner, stream)
    K = learner.n_tasks
    assert learner.add_task() == K
    assert learner.n_tasks == K + 1
    rel = learner.relation_matrix()
    if rel is not None:
        assert rel.shape == (K + 1, K + 1), f"relation matrix has shape {rel.shape}"
        assert np.isfinite(rel).all()
    new = related_tasks(
        n=300, n_tasks=1, n_features=learner.n_features, kind=learner.label_kind, seed=3
    )
    for x, y, _ in new:
        assert np.isfinite(learner.decision_one(x, K))
        if learner.query_one(x, K):
            learner.learn_one(x, y, K)
    restored = type(learner).from_state_dict(_through_npz(learner.state_dict()))
    assert_states_equal(learner.state_dict(), restored.state_dict(), "after add_task")


def check_input_forms_agree(make: Factory) -> None:
    """Dense arrays, 1 x d CSR rows and (indices, values) pairs give identical results."""
    learners = [make(), make(), make()]
    stream = _stream(learners[0], n=400, seed=4)
    X = stream.X.copy()
    X[:, 1] = 0.0  # some explicit zeros, so the sparse forms differ from the dense one

    def forms(x: np.ndarray) -> list[Any]:
        nz = np.flatnonzero(x)
        return [x, sp.csr_matrix(x.reshape(1, -1)), (nz[::-1].copy(), x[nz][::-1].copy())]

    for x, y, t in zip(X, stream.y.tolist(), stream.task.tolist(), strict=True):
        outs = []
        for learner, form in zip(learners, forms(x), strict=True):
            score = learner.decision_one(form, t)
            asked = learner.query_one(form, t)
            if asked:
                learner.learn_one(form, y, t)
            outs.append((score, asked))
        assert outs[0] == outs[1] == outs[2], f"input forms disagree: {outs}"
    assert_states_equal(learners[0].state_dict(), learners[1].state_dict(), "dense vs CSR")
    assert_states_equal(learners[0].state_dict(), learners[2].state_dict(), "dense vs pair")


def check_bad_input_raises_and_changes_nothing(make: Factory) -> None:
    """Wrong dimension, NaN/inf, values that are not numbers (strings, complex numbers,
    objects, an index beyond int64, boolean indices), no batch at all, unknown task and
    bad labels raise ValueError; state is unchanged."""
    learner = make()
    stream = _stream(learner, n=200, seed=5)
    _run(learner, stream)
    before = learner.state_dict()
    d, K = learner.n_features, learner.n_tasks
    good = stream.X[0]
    good_y = float(stream.y[0])
    nan = good.copy()
    nan[0] = np.nan
    inf = good.copy()
    inf[-1] = np.inf
    bad_x = [np.ones(d + 1), np.ones(d - 1) if d > 1 else np.ones(3), nan, inf, ([d], [1.0]), "x"]
    bad_x += [
        good.astype(np.complex128),
        ["1"] * d,
        (["a"], [1.0]),
        ([2**70], [1.0]),
        (np.array([True]), [1.0]),
        ([0], ["1"]),
    ]
    for x in bad_x:
        _expect_value_error(learner.decision_one, x, 0)
        _expect_value_error(learner.learn_one, x, good_y, 0)
        _expect_value_error(learner.query_one, x, 0)
    for t in (-1, K, 1.5, "0", None):
        _expect_value_error(learner.learn_one, good, good_y, t)
        _expect_value_error(learner.decision_one, good, t)
    bad_labels: list[Any] = [np.nan, np.inf, "1", None]
    if learner.label_kind == "classification":
        bad_labels += [0, 2, 0.5]
    for y in bad_labels:
        _expect_value_error(learner.learn_one, good, y, 0)
    bad_y = np.array([good_y] * 4)
    bad_y[2] = np.nan
    _expect_value_error(learner.learn_many, stream.X[:4], bad_y, 0)
    X_nan = stream.X[:4].copy()
    X_nan[3, 0] = np.nan
    _expect_value_error(learner.learn_many, X_nan, stream.y[:4], 0)
    _expect_value_error(learner.learn_many, stream.X[:4], stream.y[:4], [0, 1, K, 0])
    for X in (None, 3.0, stream.X[:4].astype(np.complex128), sp.csr_matrix(stream.X[:4] * 1j)):
        _expect_value_error(learner.learn_many, X, stream.y[:4], 0)
        _expect_value_error(learner.score_and_learn_many, X, stream.y[:4], 0)
    for y in (stream.y[:4].astype(str), stream.y[:4].astype(np.complex128), [object()] * 4):
        _expect_value_error(learner.learn_many, stream.X[:4], y, 0)
        _expect_value_error(learner.score_and_learn_many, stream.X[:4], y, 0)
    assert_states_equal(before, learner.state_dict(), "after rejected input")


def check_bad_values_of_a_large_batch(make: Factory) -> None:
    """A learner that declares ``scores_show_bad_values`` runs large dense batches without
    the NaN/inf check ahead of the pass (``Learner._batch_pass``). A NaN, +inf or -inf in
    any column, in the first, a middle or the last row, of a fresh or a trained learner,
    float64 or float32, still raises ValueError and changes nothing (the generator
    included: the next batch's numbers are those of a learner rebuilt from the state before);
    a batch without one gives the numbers of the checked pass, bit for bit. A learner that
    does not declare it has nothing to check here (its batches are checked first)."""
    probe = make()
    if not probe.scores_show_bad_values:
        return
    d = probe.n_features
    n = max(1200, -(-probe._state_floor() // d))  # rows enough to leave the check out
    stream = _stream(probe, n=400 + n, seed=11)
    rows = slice(400, 400 + n)
    X, y, tasks = stream.X[rows], stream.y[rows], stream.task[rows]
    rng = np.random.default_rng(11)
    for trained in (False, True):
        learner = make()
        learner.unchecked_batch_values = 0  # this check's batches are small
        if trained:
            learner.score_and_learn_many(stream.X[:400], stream.y[:400], stream.task[:400])
        assert learner._skips_value_check(X), "the check's batch must take the unchecked pass"
        before = learner.state_dict()
        cases = [(0, 0, np.nan), (n - 1, d - 1, np.inf)]
        cases += [
            (int(rng.integers(1, n - 1)), j, (np.nan, np.inf, -np.inf)[j % 3]) for j in range(d)
        ]
        for i, j, value in cases:
            for dtype in (np.float64, np.float32) if j == 0 else (np.float64,):
                bad = X.astype(dtype)
                bad[i, j] = value
                assert learner._skips_value_check(bad), (
                    "unchecked pass not taken: a restore lost the floor"
                )
                _expect_value_error(learner.score_and_learn_many, bad, y, tasks)
                rounds = getattr(learner, "query_and_learn_many", None)
                if rounds is not None:
                    _expect_value_error(rounds, bad, y, tasks)
                assert_states_equal(before, learner.state_dict(), f"after {value} at ({i}, {j})")
        checked = type(learner).from_state_dict(before)
        checked.unchecked_batch_values = X.size + 1  # the checked pass
        assert not checked._skips_value_check(X)
        got = learner.score_and_learn_many(X, y, tasks)
        want = checked.score_and_learn_many(X, y, tasks)
        assert np.array_equal(got, want), "the unchecked pass's scores differ from the checked"
        assert_states_equal(checked.state_dict(), learner.state_dict(), "unchecked vs checked")


def _expect_value_error(call: Callable[..., object], *args: Any) -> None:
    try:
        call(*args)
    except ValueError:
        return
    raise AssertionError(f"expected ValueError from {call.__name__}{args!r}")


def check_same_seed_same_run(make: Factory) -> None:
    """Two learners with the same seed produce identical scores, queries and states."""
    a, b = make(), make()
    stream = _stream(a, n=800, seed=6)
    assert _run(a, stream) == _run(b, stream)
    assert_states_equal(a.state_dict(), b.state_dict(), "same seed")


def check_batch_matches_rows(make: Factory) -> None:
    """score_and_learn_many equals decision_one + learn_one row by row (to rounding)."""
    a, b = make(), make()
    stream = _stream(a, n=900, seed=7)
    rows = np.array([s for s, _ in _run(a, stream, active=False)])
    batched = np.concatenate(
        [
            b.score_and_learn_many(
                stream.X[i : i + 50], stream.y[i : i + 50], stream.task[i : i + 50]
            )
            for i in range(0, len(stream), 50)
        ]
    )
    np.testing.assert_allclose(batched, rows, rtol=1e-9, atol=1e-9)
    sa, sb = a.state_dict(), b.state_dict()
    for key, va in sa.items():
        if isinstance(va, np.ndarray) and va.dtype.kind == "f":
            np.testing.assert_allclose(np.asarray(sb[key]), va, rtol=1e-9, atol=1e-9, err_msg=key)


def check_query_one(make: Factory) -> None:
    """query_one answers bools; passive learners always ask; active ones ask sometimes, within budget."""
    learner = make()
    stream = _stream(learner, n=1500, seed=8)
    asked = np.array([a for _, a in _run(learner, stream)])
    if not learner.is_active:
        assert asked.all(), "a passive learner must always ask"
        return
    assert 0 < asked.sum() < len(asked), f"active learner asked {asked.sum()} of {len(asked)}"
    assert learner.n_queries_ == int(asked.sum())
    budget = int(asked.sum() // 3)
    capped = type(learner)(
        n_features=learner.n_features,
        n_tasks=learner.n_tasks,
        seed=learner.seed,
        **{**learner.hyper, "budget": budget},
    )
    capped_asked = np.array([a for _, a in _run(capped, stream)])
    assert capped_asked.sum() == budget, f"budget {budget} but asked {capped_asked.sum()}"


def check_decide_and_query(make: Factory) -> None:
    """decide_and_query equals decision_one, query_probability (where reported) and
    query_one in this order, bit for bit: scores, probabilities, answers, draws and the
    state, learning every asked label in between; also once a budget is spent."""
    a, b = make(), make()
    stream = _stream(a, n=800, seed=13)
    reporter = query_probability_reporter(a)
    budget = None
    for i, (x, y, t) in enumerate(stream):
        if i == 400 and a.is_active:  # from here on, a budget that is soon spent
            budget = a.n_queries_ + 20
            a._budget = b._budget = budget
        score = a.decision_one(x, t)
        p = None if reporter is None else float(reporter.query_probability(x, t))
        asked = a.query_one(x, t)
        probability = i % 2 == 0  # with and without the probability asked for
        expected = (score, p if probability else None, asked)
        assert b.decide_and_query(x, t, probability=probability) == expected, i
        if asked:
            a.learn_one(x, y, t)
            b.learn_one(x, y, t)
    assert a.n_queries_ == b.n_queries_
    if budget is not None:
        assert a.n_queries_ <= budget
    assert_states_equal(a.state_dict(), b.state_dict(), "decide_and_query")


def check_decide_and_query_many(make: Factory) -> None:
    """decide_and_query_many equals decide_and_query row by row over blocks of unlabelled
    rows: the same answers, draws, query count and state, learning every asked label in
    between; also once a budget runs out inside a block. Scores and probabilities bit for
    bit where per_event_is_batch holds, else to rounding. The same rows as a CSR matrix
    give the same answers; a block with a bad row raises and changes nothing."""
    a, b = make(), make()
    stream = _stream(a, n=800, seed=17)
    reports = query_probability_reporter(a) is not None
    exact = a.per_event_is_batch()

    def same(got: np.ndarray, want: list[float], what: str) -> None:
        if exact:
            assert np.array_equal(got, np.array(want), equal_nan=True), what
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=what)

    for block, start in enumerate(range(0, len(stream), 50)):
        if start == 400 and a.is_active:  # a budget that runs out within the next blocks
            a._budget = b._budget = a.n_queries_ + 20
        X, y, tasks = (arr[start : start + 50] for arr in (stream.X, stream.y, stream.task))
        probability = block % 2 == 0
        rows = [a.decide_and_query(x, t, probability=probability) for x, t in zip(X, tasks)]
        if block == 3:  # the same rows as CSR, on a copy of b
            sparse = (
                type(b)
                .from_state_dict(b.state_dict())
                .decide_and_query_many(sp.csr_matrix(X), tasks)
            )
        scores, p, asked = b.decide_and_query_many(X, tasks, probability=probability)
        assert asked.dtype == np.bool_ and asked.tolist() == [r[2] for r in rows], block
        same(scores, [r[0] for r in rows], f"scores of block {block}")
        if probability and reports:
            assert p is not None
            want_p = [r[1] for r in rows if r[1] is not None]
            assert len(want_p) == len(rows), block
            same(p, want_p, f"probabilities of block {block}")
        else:
            assert p is None and all(r[1] is None for r in rows), block
        if block == 3:
            assert sparse[2].tolist() == asked.tolist()
            np.testing.assert_allclose(sparse[0], scores, rtol=1e-12, atol=1e-12)
        assert a.n_queries_ == b.n_queries_, block
        for i in np.flatnonzero(asked).tolist():
            a.learn_one(X[i], y[i], int(tasks[i]))
            b.learn_one(X[i], y[i], int(tasks[i]))
    assert_states_equal(a.state_dict(), b.state_dict(), "decide_and_query_many")
    bad = stream.X[:20].copy()
    bad[13, 2] = np.nan
    before = b.state_dict()
    try:
        b.decide_and_query_many(bad, stream.task[:20])
    except ValueError:
        pass
    else:
        raise AssertionError("a NaN row must raise ValueError")
    assert_states_equal(before, b.state_dict(), "after a bad block")


def check_task_weights(make: Factory) -> None:
    """task_weights(), where given, has shape (K, dim) and reproduces decision_one."""
    learner = make()
    stream = _stream(learner, n=500, seed=9)
    _run(learner, stream)
    W = learner.task_weights()
    if W is None:
        return
    assert W.shape == (learner.n_tasks, learner.dim), f"task_weights shape {W.shape}"
    for x, _, t in list(stream)[:50]:
        v = learner._prepare(x).dense()
        np.testing.assert_allclose(W[t] @ v, learner.decision_one(x, t), rtol=1e-9, atol=1e-9)


def check_score_and_learn_one(make: Factory) -> None:
    """score_and_learn_one equals decision_one then learn_one, bit for bit."""
    a, b = make(), make()
    stream = _stream(a, n=600, seed=10)
    for x, y, t in stream:
        expected = a.decision_one(x, t)
        a.learn_one(x, y, t)
        assert b.score_and_learn_one(x, y, t) == expected
    assert_states_equal(a.state_dict(), b.state_dict(), "score_and_learn_one")


def check_per_event_is_batch(make: Factory) -> None:
    """Where a learner says its per-event call is its batch path (``per_event_is_batch``),
    a row gives the same score and state bit for bit whether it is learned alone, as a
    one-row batch or inside a batch of any size, dense or CSR: the service's worker
    relies on it."""
    if not make().per_event_is_batch():
        return
    rng = np.random.default_rng(12)
    dense = _stream(make(), n=600, seed=12)
    # a fifth of the entries zero: a single row is then sparse in its canonical form
    X = np.where(rng.random(dense.X.shape) < 0.2, 0.0, dense.X)
    cuts = np.unique(np.concatenate([[0], rng.integers(0, len(dense), 40), [len(dense)]]))
    for rows_of in (X, sp.csr_matrix(X)):
        _assert_per_event_is_batch(make, rows_of, dense.y, dense.task, cuts)


def _assert_per_event_is_batch(
    make: Factory, X: Any, y: np.ndarray, task: np.ndarray, cuts: np.ndarray
) -> None:
    alone, one_row, grouped = make(), make(), make()
    form = "CSR" if sp.issparse(X) else "dense"
    singles = np.array(
        [alone.score_and_learn_one(X[i], float(y[i]), int(task[i])) for i in range(len(y))]
    )
    rows = np.concatenate(
        [
            one_row.score_and_learn_many(X[i : i + 1], y[i : i + 1], task[i : i + 1])
            for i in range(len(y))
        ]
    )
    groups = np.concatenate(
        [
            grouped.score_and_learn_many(X[a:b], y[a:b], task[a:b])
            for a, b in itertools.pairwise(cuts)
        ]
    )
    assert np.array_equal(singles, rows), f"{form}: per event vs one-row batches: scores differ"
    assert np.array_equal(singles, groups), f"{form}: per event vs batches: scores differ"
    assert_states_equal(alone.state_dict(), one_row.state_dict(), f"{form}: per event vs one-row")
    assert_states_equal(alone.state_dict(), grouped.state_dict(), f"{form}: per event vs batches")


def _implements(cls: type[Learner], *methods: str) -> bool:
    return all(callable(getattr(cls, m, None)) for m in methods)


def check_declared_capabilities(make: Factory) -> None:
    """Capability flags match the methods: declared ones work, implemented ones are declared.

    ``reports_query_probability`` <=> ``query_probability`` exists (values in [0, 1], no
    state change); ``reports_outliers`` <=> ``outlier_scores`` and ``outlier_tasks`` exist
    (shape (K,), flagged tasks in range); ``is_active`` False => ``query_one`` answers True
    for every input and changes nothing (see :mod:`learners.base`).
    """
    learner = make()
    cls = type(learner)
    stream = _stream(learner, n=300, seed=11)
    _run(learner, stream)
    probability = _implements(cls, "query_probability")
    assert cls.reports_query_probability == probability, (
        f"reports_query_probability is {cls.reports_query_probability} but query_probability "
        f"is {'' if probability else 'not '}implemented"
    )
    outliers = [_implements(cls, m) for m in ("outlier_scores", "outlier_tasks")]
    assert all(outliers) or not any(outliers), "outlier_scores and outlier_tasks come together"
    assert cls.reports_outliers == outliers[0], (
        f"reports_outliers is {cls.reports_outliers} but the outlier methods are "
        f"{'' if outliers[0] else 'not '}implemented"
    )
    before = learner.state_dict()
    reporter = query_probability_reporter(learner)
    if reporter is not None:
        for x, _, t in list(stream)[:50]:
            p = reporter.query_probability(x, t)
            assert isinstance(p, float) and 0.0 <= p <= 1.0, f"query probability {p!r}"
    outlier = outlier_reporter(learner)
    if outlier is not None:
        scores = np.asarray(outlier.outlier_scores())
        assert scores.shape == (learner.n_tasks,), f"outlier_scores shape {scores.shape}"
        assert np.isfinite(scores).all()
        flagged = outlier.outlier_tasks()
        assert all(isinstance(k, int) and 0 <= k < learner.n_tasks for k in flagged), flagged
    if not learner.is_active:
        assert all(learner.query_one(x, t) is True for x, _, t in stream), "passive query_one"
    assert_states_equal(before, learner.state_dict(), "after the capability calls")


def check_relation_kind(make: Factory) -> None:
    """The declared relation kind is a known one, has a meaning, and is "none" exactly when
    :meth:`Learner.relation_matrix` returns None (docs/architecture.md, "The API")."""
    learner = make()
    _run(learner, _stream(learner, n=200, seed=12))
    kind, meaning = learner.relation_description()
    assert kind in RELATION_KINDS, f"relation_kind {kind!r} is not one of {RELATION_KINDS}"
    assert isinstance(meaning, str) and meaning.strip(), "relation_meaning is empty"
    matrix = learner.relation_matrix()
    assert (matrix is None) == (kind == "none"), (
        f"relation_kind is {kind!r} but relation_matrix() returns "
        f"{'None' if matrix is None else 'a matrix'}"
    )


ALL_CHECKS: tuple[Check, ...] = (
    check_declared_capabilities,
    check_relation_kind,
    check_kernel_matches_reference,
    check_task_weights,
    check_score_and_learn_one,
    check_per_event_is_batch,
    check_info,
    check_learns_related_stream,
    check_decision_is_pure,
    check_state_round_trip,
    check_add_task,
    check_input_forms_agree,
    check_bad_input_raises_and_changes_nothing,
    check_bad_values_of_a_large_batch,
    check_same_seed_same_run,
    check_batch_matches_rows,
    check_query_one,
    check_decide_and_query,
    check_decide_and_query_many,
)


def yield_checks(cls: type[Learner]) -> Iterator[Check]:
    """The checks that apply to ``cls`` (all of them; exemptions are reported by the runner).

    Multiview learners (``cls.multiview``) also get :mod:`learners.checks.multiview`.
    """
    yield from ALL_CHECKS
    if getattr(cls, "multiview", False):
        from learners.checks.multiview import MULTIVIEW_CHECKS

        yield from MULTIVIEW_CHECKS


def default_factory(cls: type[Learner], params: Mapping[str, Any], seed: int = 0) -> Factory:
    """A factory for the conformance shape (d = 10, K = 4)."""

    def make() -> Learner:
        return cls(n_features=N_FEATURES, n_tasks=N_TASKS, seed=seed, **dict(params))

    return make
