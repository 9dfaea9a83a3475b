"""The group-lasso proximal step (zhang2018 Eqs. 9, 10 and 22)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize

from learners.rom.prox import group_shrink, shrink_factor

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
vectors = arrays(np.float64, st.integers(1, 8), elements=finite)


def eq9_objective(q: np.ndarray, q_hat: np.ndarray, eta: float, gamma: float) -> float:
    """Eq. 9: ``1/(2 eta) ||q - q_hat||^2 + gamma ||q||_2``."""
    return float(0.5 / eta * np.sum((q - q_hat) ** 2) + gamma * np.linalg.norm(q))


@pytest.mark.parametrize("case", range(12))
def test_eq10_is_the_minimiser_of_eq9(case: int) -> None:
    """Eq. 10 with threshold eta*gamma agrees with a numeric minimiser of Eq. 9.

    Random q_hat in R^6, eta in [0.05, 1], gamma drawn so that about half of the
    cases have ``eta gamma >= ||q_hat||`` (the answer is then exactly 0).
    """
    rng = np.random.default_rng(100 + case)
    q_hat = rng.normal(size=6)
    eta = float(rng.uniform(0.05, 1.0))
    gamma = float(rng.uniform(0.0, 2.0) * np.linalg.norm(q_hat) / eta)
    closed = group_shrink(q_hat, eta * gamma)
    numeric = minimize(
        eq9_objective,
        x0=q_hat,
        args=(q_hat, eta, gamma),
        method="Powell",
        options={"xtol": 1e-10, "ftol": 1e-14, "maxiter": 100000},
    ).x
    f_closed = eq9_objective(closed, q_hat, eta, gamma)
    f_numeric = eq9_objective(numeric, q_hat, eta, gamma)
    assert f_closed <= f_numeric + 1e-9
    np.testing.assert_allclose(closed, numeric, atol=1e-4)
    if eta * gamma >= np.linalg.norm(q_hat):
        assert not closed.any()
    else:
        assert np.linalg.norm(closed) == pytest.approx(np.linalg.norm(q_hat) - eta * gamma)


@settings(max_examples=200, deadline=None)
@given(v=vectors, extra=st.floats(0.0, 1e3, allow_nan=False))
def test_zero_exactly_when_threshold_reaches_the_norm(v: np.ndarray, extra: float) -> None:
    """A threshold >= ||v|| gives the exact zero vector (whole-column sparsity)."""
    threshold = float(np.linalg.norm(v)) + extra
    out = group_shrink(v, threshold)
    assert out.shape == v.shape
    assert np.all(out == 0.0)
    assert shrink_factor(float(np.linalg.norm(v)), threshold) == 0.0


@settings(max_examples=200, deadline=None)
@given(v=vectors, fraction=st.floats(0.0, 0.999))
def test_below_the_norm_the_direction_is_kept_and_the_norm_drops_by_the_threshold(
    v: np.ndarray, fraction: float
) -> None:
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        assert not group_shrink(v, 0.0).any()
        return
    out = group_shrink(v, fraction * norm)
    assert np.linalg.norm(out) == pytest.approx(norm - fraction * norm, rel=1e-9, abs=1e-9)
    assert float(out @ v) >= 0.0
