"""``adaptive-auto``: input views, each an ``adaptive`` selector, and the leader between them
(docs/algorithms.md Sec. 11.8)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.adaptive.views import AdaptiveViews
from learners.checks.kernels import reference_of

GRID = {
    "losses": "logistic,arow",
    "etas": "1.0,0.5,3.0",
    "couplings": "0.5,8.0",
    "arow_couplings": "0.25,8.0",
}


def _stream(n: int, d: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Related tasks on rows of very different lengths (where the two views disagree)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.lognormal(0.0, 1.5, size=(n, 1))
    w = rng.normal(size=d)
    tasks = rng.integers(0, k, n)
    y = np.where(X @ w + 0.3 * rng.normal(size=n) * np.linalg.norm(X, axis=1) >= 0, 1.0, -1.0)
    return X, y, tasks


def _check_leader(
    auto: AdaptiveViews, got: np.ndarray, s1: np.ndarray, s2: np.ndarray, y: np.ndarray
) -> list[int]:
    """``auto``'s scores ``got`` and view counts against the leader rule computed by hand from
    its two views' scores ``s1`` and ``s2``: per row, the score of the view with fewer
    progressive mistakes before it (the first on ties). Returns each view's mistakes."""
    want, mistakes = [], [0, 0]
    for i in range(len(y)):
        want.append(s2[i] if mistakes[1] < mistakes[0] else s1[i])
        mistakes[0] += int((s1[i] >= 0) != (y[i] > 0))
        mistakes[1] += int((s2[i] >= 0) != (y[i] > 0))
    assert got.tolist() == want
    assert auto.view_mistakes_.tolist() == mistakes
    return mistakes


def _check_two_views(
    auto: AdaptiveViews,
    got: np.ndarray,
    rows: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    **grid: object,
) -> list[int]:
    """``auto`` (two views, whose batch call on ``y`` and ``tasks`` returned ``got``) against two separate ``adaptive``
    selectors on ``rows`` as given and at unit length: the same first-view weights and, per
    row, the score of the view with fewer progressive mistakes before it (the first on ties),
    computed by hand. Returns each view's mistakes."""
    d, k = rows.shape[1], int(tasks.max()) + 1
    first = learners.make("adaptive", n_features=d, n_tasks=k, **grid)
    second = learners.make("adaptive", n_features=d, n_tasks=k, l2_normalize=True, **grid)
    s1, s2 = first.score_and_learn_many(rows, y, tasks), second.score_and_learn_many(rows, y, tasks)
    mistakes = _check_leader(auto, got, s1, s2, y)
    np.testing.assert_array_equal(auto.views_[0].U0_, first.U0_)
    np.testing.assert_array_equal(auto.views_[1].U0_, second.U0_)
    return mistakes


def test_the_views_are_adaptive_selectors_on_raw_and_unit_length_rows() -> None:
    """Each view equals a separate ``adaptive`` with the same grid on the scaled rows, and the
    learner's score is the score of the view with fewer progressive mistakes before the row."""
    X, y, tasks = _stream(400, 6, 3, seed=1)
    auto = AdaptiveViews(n_features=6, n_tasks=3, views="raw,l2")
    got = auto.score_and_learn_many(X, y, tasks)
    mistakes = _check_two_views(auto, got, X, y, tasks, **GRID)
    # the stream makes the views disagree, so both lead at some point
    assert mistakes[0] != mistakes[1]


def _log_scaled(X: np.ndarray) -> np.ndarray:
    """``sign(x) log(1 + |x|)`` of the rows, then the bias feature 1 appended."""
    return np.hstack([np.copysign(np.log1p(np.abs(X)), X), np.ones((X.shape[0], 1))])


def test_the_log_views_are_selectors_on_log_scaled_rows_and_their_unit_length() -> None:
    """``log`` and ``log-l2``: ``adaptive`` on the log-scaled rows (the bias feature stays 1),
    without and with the unit-length scaling, the leader as above; event by event the same."""
    X, y, tasks = _stream(400, 6, 3, seed=6)
    X[:, 2] = np.round(np.abs(X[:, 2]) * 3)  # a count-like column, zeros included
    auto = AdaptiveViews(n_features=6, n_tasks=3, views="log,log-l2")
    got = auto.score_and_learn_many(X, y, tasks)
    mistakes = _check_two_views(auto, got, _log_scaled(X), y, tasks, append_bias=False, **GRID)
    single = learners.make("adaptive-auto", n_features=6, n_tasks=3, views="log,log-l2")
    one = [single.score_and_learn_one(x, float(t), int(k)) for x, t, k in zip(X, y, tasks)]
    np.testing.assert_allclose(one, got, rtol=1e-12, atol=1e-12)
    assert single.view_mistakes_.tolist() == mistakes


@pytest.mark.parametrize(
    ("d", "want"),
    [
        (1, ["log", "log-l2", "log-quad"]),
        (32, ["log", "log-l2", "log-quad"]),
        (33, ["log", "log-l2"]),
    ],
)
def test_auto_adds_the_products_view_to_the_log_views_for_narrow_rows(
    d: int, want: list[str]
) -> None:
    auto = learners.make("adaptive-auto", n_features=d, n_tasks=2)
    assert auto.hyper["views"] == "auto"
    assert auto.view_names == want
    assert [inner.n_features for inner in auto.views_] == [d + 1, d + 1, d * (d + 3) // 2 + 1][
        : len(want)
    ]


def _with_products(X: np.ndarray) -> np.ndarray:
    """Each row's log-scaled values, then their products ``x_i x_j`` (``i <= j``, row by row
    of the upper triangle), then the bias feature 1."""
    L = np.copysign(np.log1p(np.abs(X)), X)
    d = X.shape[1]
    products = [L[:, i] * L[:, j] for i in range(d) for j in range(i, d)]
    return np.hstack([L, np.column_stack(products), np.ones((X.shape[0], 1))])


def test_the_products_view_is_a_selector_on_the_log_scaled_rows_and_their_products() -> None:
    """``log-quad`` is ``adaptive`` on ``[log x, log x_i log x_j, 1]`` (a quadratic model of the
    log-scaled row); as a second view the leader rule is the one of the other views; batch,
    sparse and event by event agree."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(600, 4)) * 2.0
    tasks = rng.integers(0, 3, 600)
    y = np.where(X[:, 0] * X[:, 1] + 0.2 * rng.normal(size=600) > 0, 1.0, -1.0)  # no hyperplane
    auto = learners.make("adaptive-auto", n_features=4, n_tasks=3, views="log-quad,log-l2")
    got = auto.score_and_learn_many(X, y, tasks)
    products = learners.make("adaptive", n_features=15, n_tasks=3, append_bias=False, **GRID)
    logged = learners.make(
        "adaptive", n_features=4, n_tasks=3, l2_normalize=True, log_scale=True, **GRID
    )
    s1 = products.score_and_learn_many(_with_products(X), y, tasks)
    s2 = logged.score_and_learn_many(X, y, tasks)
    mistakes = _check_leader(auto, got, s1, s2, y)
    np.testing.assert_array_equal(auto.views_[0].U_, products.U_)
    # the products separate what a hyperplane cannot: far fewer mistakes than the linear view
    assert mistakes[0] < 0.6 * mistakes[1]
    assert auto.leader_view() == "log-quad"
    sparse = learners.make("adaptive-auto", n_features=4, n_tasks=3, views="log-quad,log-l2")
    np.testing.assert_array_equal(sparse.score_and_learn_many(sp.csr_matrix(X), y, tasks), got)
    single = learners.make("adaptive-auto", n_features=4, n_tasks=3, views="log-quad,log-l2")
    one = [single.score_and_learn_one(x, float(t), int(k)) for x, t, k in zip(X, y, tasks)]
    np.testing.assert_allclose(one, got, rtol=1e-12, atol=1e-12)
    assert single.view_mistakes_.tolist() == mistakes
    assert single.decision_one(X[0], 2) == pytest.approx(auto.decision_one(X[0], 2), rel=1e-12)


def test_the_products_view_is_refused_for_wide_rows() -> None:
    learners.make("adaptive-auto", n_features=100, n_tasks=1, views="log-quad")
    with pytest.raises(ValueError, match="views: log-quad needs at most 100 features"):
        learners.make("adaptive-auto", n_features=101, n_tasks=1, views="log,log-quad")


def test_a_single_view_is_exactly_adaptive() -> None:
    X, y, tasks = _stream(200, 4, 2, seed=2)
    auto = learners.make("adaptive-auto", n_features=4, n_tasks=2, views="raw")
    plain = learners.make("adaptive", n_features=4, n_tasks=2, **GRID)
    np.testing.assert_array_equal(
        auto.score_and_learn_many(X, y, tasks), plain.score_and_learn_many(X, y, tasks)
    )


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(1, 149), max_size=6), seed=st.integers(0, 10_000))
def test_the_result_does_not_depend_on_where_the_stream_is_cut(cuts: list[int], seed: int) -> None:
    """Batches cut anywhere give the scores and state of one batch (the worker merges and
    splits entries at read boundaries)."""
    X, y, tasks = _stream(150, 3, 2, seed=seed)
    whole = learners.make("adaptive-auto", n_features=3, n_tasks=2)
    want = whole.score_and_learn_many(X, y, tasks)
    parts = learners.make("adaptive-auto", n_features=3, n_tasks=2)
    bounds = [0, *sorted(set(cuts)), 150]
    got = np.concatenate(
        [
            parts.score_and_learn_many(X[a:b], y[a:b], tasks[a:b])
            for a, b in itertools.pairwise(bounds)
        ]
    )
    np.testing.assert_array_equal(got, want)
    for key, value in whole.state_dict().items():
        other = parts.state_dict()[key]
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(other, value, err_msg=key)
        else:
            assert other == value, key


def test_task_weights_follow_the_leading_view() -> None:
    X, y, tasks = _stream(300, 5, 2, seed=3)
    auto = learners.make("adaptive-auto", n_features=5, n_tasks=2, views="raw,l2")
    seen = set()
    for start in range(0, 300, 30):
        auto.learn_many(X[start : start + 30], y[start : start + 30], tasks[start : start + 30])
        W = auto.task_weights()
        seen.add(auto.leader_view())
        if auto.leader_view() == "l2":
            assert W is None
        else:
            assert W is not None
            v = np.append(X[0], 1.0)
            assert W[1] @ v == pytest.approx(auto.decision_one(X[0], 1), rel=1e-12)
    assert "raw" in seen
    # a log-scaled view's score is not linear in the row: no weights while it leads
    logged = learners.make("adaptive-auto", n_features=5, n_tasks=2)
    logged.learn_many(X, y, tasks)
    assert logged.task_weights() is None


def test_state_is_stored_per_view_and_restored() -> None:
    X, y, tasks = _stream(120, 3, 2, seed=4)
    auto = learners.make("adaptive-auto", n_features=3, n_tasks=2, views="l2,log,log-l2")
    auto.learn_many(X, y, tasks)
    state = auto.state_dict()
    want = {"state.view_mistakes_", "state.l2_U0_", "state.log_U0_", "state.log-l2_mistakes_"}
    assert want <= set(state)
    back = AdaptiveViews.from_state_dict(state)
    assert back.decision_one(X[0], 1) == auto.decision_one(X[0], 1)
    assert back.leader_view() == auto.leader_view()


@pytest.mark.parametrize(
    "views", ["", "raw,raw", "l1", "raw,l2,raw", "log_l2", "log,l2,log", "auto,log", "quad"]
)
def test_bad_views_are_refused(views: str) -> None:
    with pytest.raises(ValueError, match="views"):
        learners.make("adaptive-auto", n_features=2, n_tasks=1, views=views)


@pytest.mark.parametrize("d", [10, 40])
def test_state_bytes_is_one_selector_per_view(d: int) -> None:
    """Two selectors on ``d + 1`` inputs, and for narrow rows one on ``d (d + 3) / 2 + 1``;
    per view its mistakes, duels and index (4 int64), and the pruning clock."""
    one = learners.get("adaptive").state_bytes(d + 1, 4, append_bias=False, **GRID)
    want = 2 * one + 2 * 32 + 8
    if d <= 32:
        want += (
            learners.get("adaptive").state_bytes(d * (d + 3) // 2 + 1, 4, append_bias=False, **GRID)
            + 32
        )
    assert learners.get("adaptive-auto").state_bytes(d, 4) == want
    auto = learners.make("adaptive-auto", n_features=d, n_tasks=4)
    arrays = sum(v.nbytes for v in auto.state_dict().values() if isinstance(v, np.ndarray))
    assert arrays <= auto.state_bytes(d, 4)


def test_relations_are_the_cosine_similarity_of_the_leading_views_predictors() -> None:
    X, y, tasks = _stream(300, 5, 3, seed=5)
    auto = learners.make("adaptive-auto", n_features=5, n_tasks=3)
    auto.learn_many(X, y, tasks)
    leading = auto.views_[int(np.argmin(auto.view_mistakes_))]
    W = leading.U0_[leading.leader()][None, :] + leading.U_[leading.leader()]
    unit = W / np.linalg.norm(W, axis=1, keepdims=True)
    R = auto.relation_matrix()
    assert R is not None
    np.testing.assert_allclose(R, unit @ unit.T, rtol=1e-12, atol=1e-12)
    assert auto.relation_description()[0] == "weight-similarity"


@pytest.mark.parametrize("views", ["log-quad", "log-quad,l2", "raw,log-l2,log"])
def test_rows_with_zeros_give_the_same_numbers_event_by_event_and_in_batches(views: str) -> None:
    """A zero entry zeroes its products, so an expanded row is sparse in its canonical form.
    The numpy reference, the compiled per-event calls and batches agree on such rows."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 5))
    X[rng.random((300, 5)) < 0.25] = 0.0
    tasks = rng.integers(0, 3, 300)
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0, 1.0, -1.0)
    batch = learners.make("adaptive-auto", n_features=5, n_tasks=3, views=views)
    single = learners.make("adaptive-auto", n_features=5, n_tasks=3, views=views)
    reference = reference_of(single)
    got = batch.score_and_learn_many(X, y, tasks)
    with np.errstate(all="raise"):  # no 0/0 anywhere on the way
        expected = [
            reference.score_and_learn_one(x, lab, t)
            for x, lab, t in zip(X, y.tolist(), tasks.tolist(), strict=True)
        ]
    one = []
    for x, lab, t in zip(X, y.tolist(), tasks.tolist(), strict=True):
        score = single.decision_one(x, t)
        assert single.score_and_learn_one(x, lab, t) == score
        one.append(score)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(one, expected, rtol=1e-12, atol=1e-12)
    assert batch.view_mistakes_.tolist() == reference.view_mistakes_.tolist()
    assert single.view_mistakes_.tolist() == reference.view_mistakes_.tolist()
