"""The exponential-weights step of the AMLC / PEER kernels (xu2018 Alg. 1, line 12).

:func:`learners.amlc.kernels._reweigh` calls ``exp`` only for a non-zero loss that
differs from the previous one; these tests check that the weights and their sum are
bit-identical to calling ``exp`` for every task, and that non-finite rates or loss
sums take the plain loop.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from learners.amlc.kernels import _exp_weights_plain, _reweigh


def losses_with_repeats(rng: np.random.Generator, K: int) -> np.ndarray:
    """Hinge losses with zeros, values clipped at 2 and runs of equal values."""
    losses = np.minimum(np.maximum(0.0, 1.0 - rng.normal(0.0, 2.0, K)), 2.0)
    losses[rng.random(K) < 0.2] = 0.0
    runs = rng.random(K) < 0.3
    losses[1:][runs[1:]] = losses[:-1][runs[1:]]
    return losses


@pytest.mark.parametrize("skip", [-1, 0, 3])
@pytest.mark.parametrize("seed", range(5))
def test_reweigh_is_bit_identical_to_exp_for_every_task(seed: int, skip: int) -> None:
    rng = np.random.default_rng(seed)
    K = 12
    tau = rng.random((3, K))
    losses = losses_with_repeats(rng, K)
    lam = float(losses.sum()) or 1.0
    fast, plain = tau.copy(), tau.copy()
    total = _reweigh(fast, 1, losses, math.log(30.0), lam, skip)
    expected = _exp_weights_plain(plain, 1, losses, math.log(30.0), lam, skip)
    assert fast.tobytes() == plain.tobytes()
    assert total == expected
    assert (fast[[0, 2]] == tau[[0, 2]]).all()


@pytest.mark.parametrize(("rate", "lam"), [(math.inf, 3.0), (1.0, math.inf), (1.0, math.nan)])
def test_reweigh_with_non_finite_rate_or_sum_calls_exp_for_every_task(
    rate: float, lam: float
) -> None:
    losses = np.array([0.0, 1.5, 1.5, 0.0, 2.0])
    fast, plain = np.ones((1, 5)), np.ones((1, 5))
    _reweigh(fast, 0, losses, rate, lam, -1)
    _exp_weights_plain(plain, 0, losses, rate, lam, -1)
    np.testing.assert_array_equal(fast, plain)  # NaN where exp(-inf * 0) or l / nan, as plain
