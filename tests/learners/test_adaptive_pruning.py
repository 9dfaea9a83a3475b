"""Pruning the selectors' losing candidates (docs/algorithms.md Sec. 11.9): the duel counts
from the definition, the test by hand, and what a pruned learner keeps, stores and
restores."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import learners
from learners.adaptive.layout import config_pair, is_interleaved, kept_pair
from learners.adaptive.pruning import count_duels, count_rows, losing, next_check
from learners.adaptive.views import AdaptiveViews
from learners.checks.kernels import reference_of

#: A grid with two hopeless configurations (tiny steps) beside two good ones.
GRID = {"losses": "logistic,hinge", "etas": "0.001,1.0", "couplings": "0.5"}


def _stream(n: int, d: int = 6, k: int = 3, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Related tasks: a shared direction plus a per-task one, 10% label noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    tasks = rng.integers(0, k, n)
    shared, own = rng.standard_normal(d), rng.standard_normal((k, d))
    margin = np.einsum("ij,ij->i", X, shared + 0.5 * own[tasks])
    y = np.where(margin > 0, 1.0, -1.0)
    y[rng.random(n) < 0.1] *= -1.0
    return X, y, tasks


def _selector(**params: Any) -> learners.Learner:
    return learners.make("adaptive", n_features=6, n_tasks=3, **{**GRID, **params})


# ---------------------------------------------------------------- the rule by hand
def test_losing_is_the_paired_sign_test_and_spares_the_leader() -> None:
    """worse - better > z sqrt(worse + better), z = 3: (9, 0): 9 > 9 is false; (16, 0):
    16 > 12; (10, 1): 9 > 3 sqrt(11) = 9.95 is false; (40, 10): 30 > 3 sqrt(50) = 21.2;
    the leader (row 4) is kept whatever its counts."""
    duels = np.array([[9, 0], [16, 0], [10, 1], [40, 10], [50, 0], [0, 0]])
    assert losing(duels, 4, 3.0).tolist() == [False, True, False, True, False, False]
    assert losing(duels, 4, 0.5).tolist() == [True, True, True, True, False, False]


def test_count_duels_counts_only_the_events_where_exactly_one_erred() -> None:
    duels = np.zeros((2, 2), dtype=np.int64)
    wrong = np.array([[True, False, True, False], [False, False, True, True]])
    lead_wrong = np.array([False, True, True, False])
    count_duels(duels, wrong, lead_wrong)
    # candidate 0: wrong where the leader was right at event 0, right where it was wrong at 1
    # candidate 1: right where the leader was wrong at 1, wrong where it was right at 3
    assert duels.tolist() == [[1, 1], [1, 1]]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda V: st.tuples(
            st.lists(st.integers(0, 5), min_size=V, max_size=V),
            st.lists(
                st.lists(st.sampled_from([-1.0, -0.0, 0.0, 0.5]), min_size=V, max_size=V),
                min_size=0,
                max_size=12,
            ),
            st.lists(st.sampled_from([-1.0, 1.0]), min_size=12, max_size=12),
        )
    )
)
def test_count_rows_is_the_running_leader_and_count_duels_row_by_row(case: Any) -> None:
    """The compiled batch count equals, row by row: the leader with the fewest mistakes so
    far (the first on ties), :func:`count_duels` against it, then the mistakes (a score of
    0 or -0 predicts +1)."""
    start, columns, labels = case
    V, n = len(start), len(columns)
    scores = np.array(columns, dtype=np.float64).T.reshape(V, n)
    y = np.array(labels[:n])
    mistakes = np.array(start, dtype=np.int64)
    duels = np.zeros((V, 2), dtype=np.int64)
    expected_mistakes, expected_duels, expected_leads = mistakes.copy(), duels.copy(), []
    for i in range(n):
        wrong = (scores[:, i] >= 0.0) != (y[i] > 0.0)
        lead = int(np.argmin(expected_mistakes))
        expected_leads.append(lead)
        count_duels(expected_duels, wrong[:, None], wrong[lead : lead + 1])
        expected_mistakes += wrong
    leads = np.full(n, -1, dtype=np.int64)
    count_rows(scores, y, mistakes, duels, leads)
    assert leads.tolist() == expected_leads
    np.testing.assert_array_equal(mistakes, expected_mistakes)
    np.testing.assert_array_equal(duels, expected_duels)


def test_checks_fall_every_prune_every_events() -> None:
    assert [next_check(e, 1000) for e in (0, 1, 999, 1000, 2500)] == [1000, 999, 1, 1000, 500]


# ---------------------------------------------------------------- the duels kept by the kernel
@pytest.mark.parametrize("path", ["kernel", "reference"])
def test_duels_are_counted_against_the_leader_before_each_event(path: str) -> None:
    """The selector's duels equal those computed by hand from its members run separately
    (each configuration learns alone as it does in the grid) and the leader rule."""
    X, y, tasks = _stream(400)
    selector = _selector(prune=0.0)
    if path == "reference":
        selector = reference_of(selector)
    members = [
        learners.make(name, n_features=6, n_tasks=3, eta=eta, b=0.5)
        for name in ("adaptive-logistic", "adaptive-hinge")
        for eta in (0.001, 1.0)
    ]
    mistakes = np.zeros(4, dtype=np.int64)
    duels = np.zeros((4, 2), dtype=np.int64)
    for x, label, t in zip(X, y, tasks.tolist(), strict=True):
        wrong = np.array(
            [(m.score_and_learn_one(x, label, t) >= 0) != (label > 0) for m in members]
        )
        lead = int(np.argmin(mistakes))  # the first on ties
        count_duels(duels, wrong[:, None], wrong[lead : lead + 1])
        mistakes += wrong
        selector.score_and_learn_one(x, label, t)
    np.testing.assert_array_equal(selector.mistakes_, mistakes)
    np.testing.assert_array_equal(selector.duels_, duels)
    assert duels[:, 0].sum() > 0 and duels[:, 1].sum() > 0


# ---------------------------------------------------------------- what pruning keeps
def test_pruning_drops_the_losers_and_keeps_the_survivors_exactly() -> None:
    """After pruning, each surviving configuration has the weights, accumulators and counts
    it has in the full grid, and the learner's predictions are the full grid's (the dropped
    configurations never lead there)."""
    X, y, tasks = _stream(3000)
    full, pruned = _selector(prune=0.0), _selector(prune_every=200)
    want = full.score_and_learn_many(X, y, tasks)
    got = pruned.score_and_learn_many(X, y, tasks)
    alive = pruned.alive_
    assert 1 <= alive.shape[0] < 4 and 0 not in alive and 2 not in alive  # the tiny steps
    assert pruned.configuration_names() == [full.configuration_names()[i] for i in alive]
    assert pruned.U_.shape[0] == pruned.G0_.shape[0] == alive.shape[0]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(pruned.U0_, full.U0_[alive], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(pruned.G_, full.G_[alive], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(pruned.mistakes_, full.mistakes_[alive])
    np.testing.assert_array_equal(pruned.duels_, full.duels_[alive])
    assert pruned.events_[0] == 3000 and full.events_[0] == 0  # no clock without pruning
    assert full.alive_.tolist() == [0, 1, 2, 3]


def test_prune_zero_keeps_every_configuration() -> None:
    X, y, tasks = _stream(3000)
    model = _selector(prune=0.0, prune_every=10)
    model.learn_many(X, y, tasks)
    assert model.alive_.tolist() == [0, 1, 2, 3] and model.U0_.shape[0] == 4


@settings(max_examples=20, deadline=None)
@given(cuts=st.lists(st.integers(1, 399), max_size=6), seed=st.integers(0, 10_000))
def test_the_checks_do_not_depend_on_where_the_stream_is_cut(cuts: list[int], seed: int) -> None:
    """Only streams on which both learners drop something count as examples: on a few
    seeds one of them keeps its whole grid, and the checks' cuts would go untested."""
    X, y, tasks = _stream(400, seed=seed)
    bounds = [0, *sorted(set(cuts)), 400]
    dropped = []
    for name, params in (("adaptive", GRID), ("adaptive-auto", {"views": "raw,l2", **GRID})):
        whole = learners.make(name, n_features=6, n_tasks=3, prune=1.0, prune_every=25, **params)
        parts = whole.clone()
        want = whole.score_and_learn_many(X, y, tasks)
        got = [
            parts.score_and_learn_many(X[a:b], y[a:b], tasks[a:b])
            for a, b in itertools.pairwise(bounds)
        ]
        np.testing.assert_array_equal(np.concatenate(got), want)
        one = whole.clone()
        singles = [
            one.score_and_learn_one(x, lab, t)
            for x, lab, t in zip(X, y, tasks.tolist(), strict=True)
        ]
        np.testing.assert_array_equal(singles, want)
        state, other = whole.state_dict(), parts.state_dict()
        assert set(state) == set(other)
        for key, value in state.items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(other[key], value, err_msg=key)
            else:
                assert other[key] == value, key
        dropped.append(_configurations_left(whole) < _configurations_left(whole.clone()))
    assume(all(dropped))


def _configurations_left(model: Any) -> int:
    """The configurations a selector, or every view of ``adaptive-auto``, still runs."""
    if isinstance(model, AdaptiveViews):
        return sum(view.alive_.shape[0] for view in model.views_)
    return int(model.alive_.shape[0])


# ---------------------------------------------------------------- state
def test_a_pruned_state_restores_the_survivors_and_goes_on_the_same() -> None:
    X, y, tasks = _stream(3000)
    model = _selector(prune_every=200)
    model.learn_many(X[:2000], y[:2000], tasks[:2000])
    assert model.alive_.shape[0] < 4
    back = type(model).from_state_dict(model.state_dict())
    np.testing.assert_array_equal(back.alive_, model.alive_)
    assert back.U_.shape == model.U_.shape
    np.testing.assert_array_equal(
        back.score_and_learn_many(X[2000:], y[2000:], tasks[2000:]),
        model.score_and_learn_many(X[2000:], y[2000:], tasks[2000:]),
    )
    np.testing.assert_array_equal(back.U0_, model.U0_)


def test_a_state_saved_before_pruning_existed_restores_every_configuration() -> None:
    X, y, tasks = _stream(300)
    model = _selector()
    model.learn_many(X, y, tasks)
    old = {
        k: v
        for k, v in model.state_dict().items()
        if k not in ("state.alive_", "state.events_", "state.duels_")
    }
    back = type(model).from_state_dict(old)
    assert back.alive_.tolist() == [0, 1, 2, 3] and back.events_[0] == 0
    assert back.duels_.shape == (4, 2) and not back.duels_.any()
    np.testing.assert_array_equal(back.U0_, model.U0_)
    assert back.decision_one(X[0], 1) == model.decision_one(X[0], 1)


@pytest.mark.parametrize("alive", [[], [1, 1], [2, 1], [-1, 2], [0, 4]])
def test_bad_surviving_indices_in_a_state_are_refused(alive: list[int]) -> None:
    state = _selector().state_dict()
    state["state.alive_"] = np.array(alive, dtype=np.int64)
    with pytest.raises(ValueError, match="alive_"):
        learners.get("adaptive").from_state_dict(state)


# ---------------------------------------------------------------- views
def _views_stream(n: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Rows of very different lengths whose label ignores the length: the unit-length view
    does far better than the raw one."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5)) * rng.lognormal(0.0, 2.0, size=(n, 1))
    tasks = rng.integers(0, 2, n)
    w = rng.standard_normal(5)
    y = np.where(X @ w >= 0, 1.0, -1.0)
    y[rng.random(n) < 0.05] *= -1.0
    return X, y, tasks


def test_a_view_far_behind_is_dropped_whole() -> None:
    X, y, tasks = _views_stream(4000)
    make = lambda **p: learners.make(  # noqa: E731
        "adaptive-auto", n_features=5, n_tasks=2, views="raw,l2", **GRID, **p
    )
    full, pruned = make(prune=0.0), make(prune_every=250)
    want = full.score_and_learn_many(X, y, tasks)
    got = pruned.score_and_learn_many(X, y, tasks)
    assert full.view_names == ["raw", "l2"] and full.leader_view() == "l2"
    assert pruned.view_names == ["l2"] and pruned.all_view_names == ["raw", "l2"]
    assert pruned.view_alive_.tolist() == [1]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    state = pruned.state_dict()
    assert not any(k.startswith("state.raw_") for k in state)
    back = AdaptiveViews.from_state_dict(state)
    assert back.view_names == ["l2"]
    np.testing.assert_array_equal(back.views_[0].U0_, pruned.views_[0].U0_)
    assert back.decision_one(X[0], 1) == pruned.decision_one(X[0], 1)


def test_a_views_state_saved_before_pruning_existed_restores_every_view() -> None:
    X, y, tasks = _views_stream(200)
    model = learners.make("adaptive-auto", n_features=5, n_tasks=2, views="raw,l2")
    model.learn_many(X, y, tasks)
    new_keys = ("view_duels_", "view_alive_", "view_events_", "alive_", "events_", "duels_")
    old = {k: v for k, v in model.state_dict().items() if not k.endswith(new_keys)}
    back = AdaptiveViews.from_state_dict(old)
    assert back.view_names == ["raw", "l2"]
    assert back.decision_one(X[0], 1) == model.decision_one(X[0], 1)


# ---------------------------------------------------------------- inside an active learner
@pytest.mark.parametrize("name", ["selective-sampling", "amlc-adaptive"])
def test_an_active_learner_runs_its_selector_base_whole(name: str) -> None:
    """The active passes never prune, so a selector base is built with ``prune = 0`` and
    ``base_params`` may not ask for pruning."""
    model = learners.make(name, n_features=6, n_tasks=3, base="adaptive", base_params=GRID)
    assert model.base_.hyper["prune"] == 0.0
    X, y, tasks = _stream(1500)
    model.learn_many(X, y, tasks)
    assert model.base_.alive_.tolist() == [0, 1, 2, 3] and model.base_.events_[0] == 0
    for extra in ({"prune": 3.0}, {"prune_every": 10}):
        with pytest.raises(ValueError, match="base_params may not set prune"):
            learners.make(
                name, n_features=6, n_tasks=3, base="adaptive", base_params={**GRID, **extra}
            )


@pytest.mark.parametrize("alive", [[], [0, 0], [1, 0], [2]])
def test_bad_surviving_views_in_a_state_are_refused(alive: list[int]) -> None:
    model = learners.make("adaptive-auto", n_features=5, n_tasks=2, views="raw,l2")
    state = model.state_dict()
    state["state.view_alive_"] = np.array(alive, dtype=np.int64)
    with pytest.raises(ValueError, match="view_alive_ must be increasing indices below 2"):
        AdaptiveViews.from_state_dict(state)


# ---------------------------------------------------------------- packing in place
@pytest.mark.parametrize("interleave", [False, True])
@pytest.mark.parametrize("shape", [(6, 7), (6, 3, 7)])
def test_kept_pair_packs_the_survivors_in_their_own_memory(
    interleave: bool, shape: tuple[int, ...]
) -> None:
    """Twice in a row, as two prunings do: the survivors' values, in order, in the order by
    feature or by configuration, in the memory the pair already used (the first pack
    and the second both take the fast path)."""
    rng = np.random.default_rng(0)
    u, g = config_pair(shape, np.zeros(shape[0]), np.zeros(shape[0]), interleave)
    u[...] = rng.normal(size=shape)
    g[...] = rng.normal(size=shape)
    want_u, want_g = u.copy(), g.copy()
    owner = u.base if interleave else None
    for keep in (np.array([1, 0, 1, 1, 0, 1], bool), np.array([0, 1, 1, 0], bool)):
        before_u, before_g = u, g
        want_u, want_g = want_u[keep], want_g[keep]
        u, g = kept_pair(u, g, keep, interleave)
        np.testing.assert_array_equal(u, want_u)
        np.testing.assert_array_equal(g, want_g)
        assert is_interleaved(u) == interleave and is_interleaved(g) == interleave
        assert np.shares_memory(u, before_u) and np.shares_memory(g, before_g)
        if interleave:
            assert u.base is owner and g.base is owner
        else:
            assert u.flags.c_contiguous and g.flags.c_contiguous


def test_a_pruned_wide_selector_keeps_its_buffer_and_restores_compact() -> None:
    """Laid out by feature, a pruned selector's arrays are views of the buffer it started
    with; its state and a learner restored from it hold the survivors only."""
    rng = np.random.default_rng(1)
    X = sp.random(3000, 40, density=0.2, random_state=1, format="csr")
    tasks = rng.integers(0, 3, 3000)
    y = np.where(np.asarray(X.sum(axis=1)).ravel() > X.sum() / 3000, 1.0, -1.0)
    model = learners.make(
        "adaptive", n_features=40, n_tasks=3, memory_order="features", prune_every=200, **GRID
    )
    buffer = model.U_.base
    model.learn_many(X, y, tasks)
    M = model.alive_.shape[0]
    assert M < 4 and model.U_.base is buffer and model.U_.shape == (M, 3, 41)
    state = model.state_dict()
    assert state["state.U_"].shape == (M, 3, 41)
    back = type(model).from_state_dict(state)
    assert back.U_.base.size == 2 * M * 3 * 41  # a buffer of the survivors only
    np.testing.assert_array_equal(back.U_, model.U_)
    assert back.decision_one(X[0], 1) == model.decision_one(X[0], 1)
