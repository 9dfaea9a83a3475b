"""Conformance checks of the multiview round contract (:mod:`learners.multiview.contract`).

:func:`learners.checks.yield_checks` adds these to the common checks for every
learner class with ``multiview = True``. They are the common checks restated
for rounds of K views: purity of the decision, state round trip (through the
npz form the service uses), bad input raising ``ValueError`` and changing
nothing, determinism by seed, test-then-train, input forms, the batch pass,
``add_task`` and interleaved events as rounds with zero views. Learners that
accept ``task_dims`` are also checked with tasks of different dimensions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from learners.base import Learner
from learners.checks.common import _expect_value_error, _through_npz, assert_states_equal

__all__ = ["MULTIVIEW_CHECKS", "ViewRounds", "related_views"]

Factory = Callable[[], Learner]
#: Dimensions of the heterogeneous variant (cycled over the tasks).
HETEROGENEOUS_DIMS = (3, 7, 5, 10)


@dataclass(frozen=True)
class ViewRounds:
    """Multiview rounds: ``views[j][r]`` is view j of round r, then ``y[r]`` and ``task[r]``."""

    views: list[np.ndarray]
    y: np.ndarray
    task: np.ndarray

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def round(self, r: int) -> list[np.ndarray]:
        """The K views of round ``r``."""
        return [v[r] for v in self.views]

    def part(self, lo: int, hi: int) -> ViewRounds:
        """Rounds ``lo .. hi - 1``."""
        return ViewRounds([v[lo:hi] for v in self.views], self.y[lo:hi], self.task[lo:hi])


def related_views(dims: list[int], n: int = 2000, seed: int = 0) -> ViewRounds:
    """Rounds whose K unit views all carry the label with margin >= 0.1 (one label per round).

    View j has a reference vector ``u_j`` and ``x_j = m_j y u_j + sqrt(1 - m_j^2) n_j``
    with ``m_j`` in [0.1, 0.6] and ``n_j`` a unit vector orthogonal to ``u_j``, so every
    view alone, and any combination of them, separates the label. Tasks are uniform.
    """
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    views = []
    for d in dims:
        u = rng.normal(size=d)
        u /= np.linalg.norm(u)
        noise = rng.normal(size=(n, d))
        noise -= np.outer(noise @ u, u)
        norms = np.linalg.norm(noise, axis=1, keepdims=True)
        noise = np.divide(noise, norms, out=np.zeros_like(noise), where=norms > 0)
        m = rng.uniform(0.1, 0.6, size=n) if d > 1 else np.ones(n)
        views.append((m * y)[:, None] * u + np.sqrt(1 - m**2)[:, None] * noise)
    return ViewRounds(views, y, rng.integers(len(dims), size=n).astype(np.int64))


def _rounds(learner: Learner, n: int = 600, seed: int = 0) -> ViewRounds:
    dims = getattr(learner, "view_dims", [learner.n_features] * learner.n_tasks)
    return related_views(list(dims), n=n, seed=seed)


def _run(learner: Any, rounds: ViewRounds) -> list[tuple[float, bool]]:
    out = []
    for r in range(len(rounds)):
        views, t = rounds.round(r), int(rounds.task[r])
        score = learner.decision_views(views, t)
        asked = learner.query_views(views, t)
        if asked:
            learner.learn_views(views, float(rounds.y[r]), t)
        out.append((score, asked))
    return out


def _variants(make: Factory) -> list[Factory]:
    """``make`` and, when the class takes ``task_dims``, a variant with heterogeneous tasks."""
    first = make()
    if "task_dims" not in {p.name for p in type(first).params}:
        return [make]
    K = first.n_tasks
    dims = [HETEROGENEOUS_DIMS[j % len(HETEROGENEOUS_DIMS)] for j in range(K)]

    def hetero() -> Learner:
        return type(first)(
            n_features=first.n_features,
            n_tasks=K,
            seed=first.seed,
            **{**first.hyper, "task_dims": dims},
        )

    return [make, hetero]


# ------------------------------------------------------------------ checks
def check_views_learn_related_rounds(make: Factory) -> None:
    """On separable multiview rounds the late mistake rate is low and below the early one."""
    for factory in _variants(make):
        learner = factory()
        rounds = _rounds(learner, n=2400, seed=11)
        scores = np.array([s for s, _ in _run(learner, rounds)])
        wrong = (scores >= 0) != (rounds.y > 0)
        third = len(rounds) // 3
        early, late = wrong[:third].mean(), wrong[-third:].mean()
        assert late <= 0.1, f"late mistake rate {late:.3f} > 0.1"
        assert late < early or late < 0.02, f"no learning: early {early:.3f}, late {late:.3f}"


def check_views_decision_is_pure(make: Factory) -> None:
    """decision_views, predict_views and query_views change neither the learner nor the views."""
    learner: Any = make()
    rounds = _rounds(learner, n=300, seed=12)
    _run(learner, rounds)
    before = learner.state_dict()
    views = [v.copy() for v in rounds.round(0)]
    for t in range(learner.n_tasks):
        learner.decision_views(views, t)
        learner.predict_views(views, t)
        learner.query_views(views, t)
        learner.task_weights()
    for a, b in zip(views, rounds.round(0), strict=True):
        assert np.array_equal(a, b), "a view was modified"
    assert_states_equal(before, learner.state_dict(), "after decision_views")


def check_views_state_round_trip(make: Factory) -> None:
    """A restored learner scores bit for bit the same and continues identically."""
    for factory in _variants(make):
        learner: Any = factory()
        rounds = _rounds(learner, n=800, seed=13)
        _run(learner, rounds.part(0, 400))
        state = learner.state_dict()
        restored: Any = type(learner).from_state_dict(_through_npz(state))
        assert_states_equal(state, restored.state_dict(), "restored")
        tail = rounds.part(400, 800)
        assert _run(learner, tail) == _run(restored, tail), "restored learner diverged"
        assert_states_equal(learner.state_dict(), restored.state_dict(), "after continuing")


def check_views_bad_input_raises_and_changes_nothing(make: Factory) -> None:
    """Wrong view count or dimension, NaN/inf, bad task or label raise ValueError; nothing changes."""
    for factory in _variants(make):
        learner: Any = factory()
        rounds = _rounds(learner, n=200, seed=14)
        _run(learner, rounds)
        before = learner.state_dict()
        good = rounds.round(0)
        K = learner.n_tasks
        nan = [v.copy() for v in good]
        nan[-1][0] = np.nan
        inf = [v.copy() for v in good]
        inf[0][-1] = np.inf
        wide = [v.copy() for v in good]
        wide[K - 1] = np.ones(wide[K - 1].shape[0] + 1)
        bad_views: list[Any] = [good[:-1], [*good, good[0]], nan, inf, wide, "views", None]
        bad_views.append(dict(enumerate(good)))
        for views in bad_views:
            _expect_value_error(learner.decision_views, views, 0)
            _expect_value_error(learner.learn_views, views, 1.0, 0)
            _expect_value_error(learner.score_and_learn_views, views, 1.0, 0)
            _expect_value_error(learner.query_views, views, 0)
        for t in (-1, K, 1.5, "0", None):
            _expect_value_error(learner.decision_views, good, t)
            _expect_value_error(learner.learn_views, good, 1.0, t)
        for y in (0, 2, 0.5, np.nan, "1", None):
            _expect_value_error(learner.learn_views, good, y, 0)
        batch = rounds.part(0, 5)
        nan_batch = [v.copy() for v in batch.views]
        nan_batch[0][3, 0] = np.nan
        _expect_value_error(learner.learn_views_many, nan_batch, batch.y, batch.task)
        bad_y = batch.y.copy()
        bad_y[2] = 0.0
        _expect_value_error(learner.learn_views_many, batch.views, bad_y, batch.task)
        _expect_value_error(learner.learn_views_many, batch.views, batch.y, [0, 1, K, 0, 0])
        _expect_value_error(learner.learn_views_many, batch.views[:-1], batch.y, batch.task)
        short = [*batch.views[:-1], batch.views[-1][:4]]
        _expect_value_error(learner.learn_views_many, short, batch.y, batch.task)
        assert_states_equal(before, learner.state_dict(), "after rejected rounds")


def check_views_same_seed_same_run(make: Factory) -> None:
    """Two learners built alike give identical scores and states on the same rounds."""
    a, b = make(), make()
    rounds = _rounds(a, n=600, seed=15)
    assert _run(a, rounds) == _run(b, rounds)
    assert_states_equal(a.state_dict(), b.state_dict(), "same seed")


def check_views_score_and_learn(make: Factory) -> None:
    """score_and_learn_views equals decision_views then learn_views, bit for bit."""
    a: Any = make()
    b: Any = make()
    rounds = _rounds(a, n=500, seed=16)
    for r in range(len(rounds)):
        views, y, t = rounds.round(r), float(rounds.y[r]), int(rounds.task[r])
        expected = a.decision_views(views, t)
        a.learn_views(views, y, t)
        assert b.score_and_learn_views(views, y, t) == expected
    assert_states_equal(a.state_dict(), b.state_dict(), "score_and_learn_views")


def check_views_input_forms_agree(make: Factory) -> None:
    """Dense views, 1 x d_j CSR rows and (indices, values) pairs give identical runs."""
    models: list[Any] = [make(), make(), make()]
    rounds = _rounds(models[0], n=300, seed=17)
    for v in rounds.views:
        v[:, 0] = 0.0  # explicit zeros, so the sparse forms differ from the dense one

    def forms(x: np.ndarray) -> list[Any]:
        nz = np.flatnonzero(x)
        return [x, sp.csr_matrix(x.reshape(1, -1)), (nz[::-1].copy(), x[nz][::-1].copy())]

    for r in range(len(rounds)):
        per_form = list(zip(*(forms(x) for x in rounds.round(r)), strict=True))
        t, y = int(rounds.task[r]), float(rounds.y[r])
        outs = [m.score_and_learn_views(list(views), y, t) for m, views in zip(models, per_form)]
        assert outs[0] == outs[1] == outs[2], f"input forms disagree: {outs}"
    assert_states_equal(models[0].state_dict(), models[1].state_dict(), "dense vs CSR")
    assert_states_equal(models[0].state_dict(), models[2].state_dict(), "dense vs pair")


def check_views_batch_matches_rounds(make: Factory) -> None:
    """score_and_learn_views_many (compiled where the learner has a kernel) equals the rounds."""
    for factory in _variants(make):
        a: Any = factory()
        b: Any = factory()
        rounds = _rounds(a, n=700, seed=18)
        one_by_one = np.array([s for s, _ in _run(a, rounds)])
        batched = np.concatenate(
            [
                b.score_and_learn_views_many(part.views, part.y, part.task)
                for part in (rounds.part(i, i + 100) for i in range(0, len(rounds), 100))
            ]
        )
        np.testing.assert_array_equal(batched >= 0, one_by_one >= 0)
        np.testing.assert_allclose(batched, one_by_one, rtol=1e-9, atol=1e-9)
        sa, sb = a.state_dict(), b.state_dict()
        for key, va in sa.items():
            if isinstance(va, np.ndarray) and va.dtype.kind == "f":
                np.testing.assert_allclose(sb[key], va, rtol=1e-9, atol=1e-9, err_msg=key)
            else:
                assert np.array_equal(np.asarray(sb[key]), np.asarray(va)), key


def check_views_add_task(make: Factory) -> None:
    """add_task mid-stream: rounds then carry K + 1 views, the new task learns, state round-trips."""
    learner: Any = make()
    rounds = _rounds(learner, n=300, seed=19)
    _run(learner, rounds)
    K = learner.n_tasks
    assert learner.add_task() == K
    assert len(learner.view_dims) == K + 1
    grown = _rounds(learner, n=600, seed=20)
    scores = np.array([s for s, _ in _run(learner, grown)])
    assert np.isfinite(scores).all()
    late = grown.part(300, 600)
    wrong = (scores[300:] >= 0) != (late.y > 0)
    assert wrong[late.task == K].mean() <= 0.2, "the added task does not learn"
    restored = type(learner).from_state_dict(_through_npz(learner.state_dict()))
    assert_states_equal(learner.state_dict(), restored.state_dict(), "after add_task")


def check_lone_view_is_a_round_with_zero_views(make: Factory) -> None:
    """An interleaved event (x, task) is the round whose other views are zero.

    An absent view has no bias feature either, so the comparison is made with
    ``append_bias`` off (a round of zero views would otherwise carry K - 1 biases).
    """
    for factory in _variants(make):
        a: Any = _without_bias(factory())
        b: Any = _without_bias(factory())
        rounds = _rounds(a, n=400, seed=21)
        dims = a.view_dims
        for r in range(len(rounds)):
            t, y = int(rounds.task[r]), float(rounds.y[r])
            x = rounds.views[t][r]
            zeros = [x if j == t else np.zeros(d) for j, d in enumerate(dims)]
            assert a.decision_one(x, t) == b.decision_views(zeros, t)
            a.learn_one(x, y, t)
            b.learn_views(zeros, y, t)
        assert_states_equal(a.state_dict(), b.state_dict(), "lone view vs zero views")
        _expect_value_error(a.learn_one, np.ones(dims[0] + 1), 1.0, 0)


def _without_bias(learner: Learner) -> Learner:
    return type(learner)(
        n_features=learner.n_features,
        n_tasks=learner.n_tasks,
        seed=learner.seed,
        **{**learner.hyper, "append_bias": False},
    )


MULTIVIEW_CHECKS: tuple[Callable[[Factory], None], ...] = (
    check_views_learn_related_rounds,
    check_views_decision_is_pure,
    check_views_state_round_trip,
    check_views_bad_input_raises_and_changes_nothing,
    check_views_same_seed_same_run,
    check_views_score_and_learn,
    check_views_input_forms_agree,
    check_views_batch_matches_rounds,
    check_views_add_task,
    check_lone_view_is_a_round_with_zero_views,
)
