"""pa-individual / pa-global: Crammer et al. (2006) Eqs. 7-9 in LIBOL's conventions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from tests.learners.reference import noisy_stream, passive_aggressive, run


def weights(model: learners.Learner) -> np.ndarray:
    W = model.task_weights()
    assert W is not None
    return W


@pytest.mark.parametrize(
    ("variant", "C", "first", "second"),
    [
        # step 1: x = (1, 2), y = +1, w = 0: f = 0, l = 1, ||x||^2 = 5.
        # step 2: x = (1, 0), y = -1: f = w_0, l = 1 + w_0, ||x||^2 = 1.
        # PA: tau1 = 1/5, w = (0.2, 0.4); f2 = 0.2, l = 1.2, tau2 = 1.2, w = (-1.0, 0.4).
        ("pa", 1.0, (0.2, 0.4), (-1.0, 0.4)),
        # PA-I, C = 0.1: tau1 = min(0.1, 0.2) = 0.1, w = (0.1, 0.2); f2 = 0.1, l = 1.1,
        # tau2 = min(0.1, 1.1) = 0.1, w = (0.0, 0.2).
        ("pa1", 0.1, (0.1, 0.2), (0.0, 0.2)),
        # PA-II, C = 1: tau1 = 1/(5 + 1/2) = 2/11, w = (2/11, 4/11); f2 = 2/11, l = 13/11,
        # tau2 = (13/11)/(1 + 1/2) = 26/33, w = (2/11 - 26/33, 4/11) = (-20/33, 4/11).
        ("pa2", 1.0, (2 / 11, 4 / 11), (-20 / 33, 4 / 11)),
    ],
)
def test_hand_worked_steps(variant, C, first, second):
    """Two steps of each variant on one task (numbers in the parameter comments)."""
    for name in ("pa-individual", "pa-global"):
        model = learners.make(name, n_features=2, n_tasks=2, variant=variant, C=C)
        model.learn_one(np.array([1.0, 2.0]), 1, 0)
        np.testing.assert_allclose(weights(model)[0], first, atol=1e-15)
        model.learn_one(np.array([1.0, 0.0]), -1, 0)
        np.testing.assert_allclose(weights(model)[0], second, atol=1e-15)
        # A third example with margin >= 1 is passive: x = (0, 5), y = +1, f = 5 * w_1 >= 1.
        model.learn_one(np.array([0.0, 5.0]), 1, 0)
        np.testing.assert_allclose(weights(model)[0], second, atol=1e-15)
        assert model.state_dict()["state.n_updates_"] == 2


def test_individual_keeps_tasks_apart_and_global_shares():
    model = learners.make("pa-individual", n_features=2, n_tasks=2, variant="pa")
    model.learn_one(np.array([1.0, 2.0]), 1, 0)
    np.testing.assert_allclose(weights(model), [[0.2, 0.4], [0.0, 0.0]], atol=1e-15)
    pooled = learners.make("pa-global", n_features=2, n_tasks=2, variant="pa")
    pooled.learn_one(np.array([1.0, 2.0]), 1, 0)
    assert pooled.decision_one(np.array([1.0, 2.0]), 1) == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize(("variant", "C"), [("pa", 1.0), ("pa1", 0.3), ("pa2", 2.0)])
def test_match_the_dense_reference(variant, C):
    """pa-individual equals one reference PA per task; pa-global one reference PA on all rows."""
    K, d = 3, 5
    X, y, tasks = noisy_stream(1500, K, d, seed=31)
    X[::17] = 0.0  # zero vectors are skipped
    indiv = learners.make("pa-individual", n_features=d, n_tasks=K, variant=variant, C=C)
    scores = run(indiv, X, y, tasks)
    for k in range(K):
        rows = tasks == k
        ref_scores, ref_w = passive_aggressive(X[rows], y[rows], variant, C)
        np.testing.assert_allclose(scores[rows], ref_scores, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(weights(indiv)[k], ref_w, rtol=1e-12, atol=1e-12)
    pooled = learners.make("pa-global", n_features=d, n_tasks=K, variant=variant, C=C)
    ref_scores, ref_w = passive_aggressive(X, y, variant, C)
    np.testing.assert_allclose(run(pooled, X, y, tasks), ref_scores, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights(pooled)[0], ref_w, rtol=1e-12, atol=1e-12)


finite = st.floats(-10.0, 10.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(
    w=st.lists(finite, min_size=3, max_size=3),
    x=st.lists(finite, min_size=3, max_size=3).filter(lambda v: np.dot(v, v) > 1e-3),
    y=st.sampled_from([-1, 1]),
    C=st.floats(0.01, 100.0),
)
def test_step_invariants(w, x, y, C):
    """After a step: PA reaches margin exactly 1 (Eq. 7's constraint); PA-I moves at most C
    and never past margin 1; PA-II stays below margin 1 when it moves (Eq. 9)."""
    x_arr, w_arr = np.array(x), np.array(w)
    margin_before = y * float(w_arr @ x_arr)
    for variant in ("pa", "pa1", "pa2"):
        model = learners.make("pa-global", n_features=3, n_tasks=1, variant=variant, C=C)
        state = model.state_dict()
        state["state.w_"] = w_arr.copy()
        model = learners.from_state_dict(state)
        model.learn_one(x_arr, y, 0)
        after = weights(model)[0]
        margin_after = y * float(after @ x_arr)
        tau = float(np.linalg.norm(after - w_arr) / np.linalg.norm(x_arr))
        if margin_before >= 1.0:
            np.testing.assert_array_equal(after, w_arr)
            continue
        if variant == "pa":
            assert margin_after == pytest.approx(1.0, abs=1e-9)
        elif variant == "pa1":
            assert tau <= C * (1 + 1e-9)
            assert margin_after <= 1.0 + 1e-9
        else:
            assert margin_before <= margin_after < 1.0 + 1e-12
