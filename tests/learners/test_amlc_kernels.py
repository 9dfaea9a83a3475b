"""Shortcuts of the AMLC / PEER kernels that must not change a bit.

:func:`learners.amlc.kernels._reweigh` (xu2018 Alg. 1, line 12) calls ``exp`` only
for a non-zero loss that differs from the previous one: the weights and their sum
are bit-identical to calling ``exp`` for every task, and non-finite rates or loss
sums take the plain loop. :func:`learners.amlc.kernels.amlc_pass` and
:func:`learners.amlc.kernels.peer_pass` (PEER+Share) compute one margin per run of
bit-equal rows of W on large batches: the results are those of one-row calls,
which compute every margin.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import scipy.sparse

import learners
from learners.active.kernels import NO_BUDGET, KernelPass
from learners.amlc.committee import LOG_SPACE_RATES_ABOVE, committee_update
from learners.amlc.kernels import (
    _exp_weights_log,
    _exp_weights_plain,
    _reweigh,
    amlc_pass,
    peer_pass,
)
from learners.checks.common import check_input_forms_agree, check_state_round_trip
from learners.checks.kernels import check_kernel_matches_reference


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


def amlc_rows(
    W: np.ndarray,
    tau: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    block: int,
    sparse: bool = False,
    share_label: bool = False,
) -> np.ndarray:
    """Labelled AMLC rounds in blocks of ``block`` rows (paper mode: sharing by the
    prediction, or by the label with ``share_label``)."""
    scores = np.empty(X.shape[0])
    for a in range(0, X.shape[0], block):
        e = min(X.shape[0], a + block)
        call = KernelPass(
            *vector_rows_of(X[a:e], sparse),
            y[a:e].copy(),
            tasks[a:e].copy(),
            False,
            np.zeros(0),
            NO_BUDGET,
            scores[a:e],
            np.zeros(e - a, dtype=np.bool_),
        )
        amlc_pass(W, tau, call, 1.0, math.log(30.0), 1.0, 1.0, False, share_label, 0.0)
    return scores


def vector_rows_of(X: np.ndarray, sparse: bool = False) -> tuple[Any, ...]:
    """The kernels' row form of ``X``: dense, or CSR of its non-zero values."""
    empty = np.zeros(0, dtype=np.int64)
    if not sparse:
        return True, np.ascontiguousarray(X), empty, empty, np.zeros(0), False, False
    csr = scipy.sparse.csr_matrix(X)
    indptr = csr.indptr.astype(np.int64)
    return False, np.zeros((0, 0)), indptr, csr.indices.astype(np.int64), csr.data, False, False


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("seed", range(4))
def test_runs_of_equal_rows_give_the_results_of_k_margins(seed: int, sparse: bool) -> None:
    """A batch large enough to track runs of equal rows of W (one margin and one update
    per run, runs split as their rows get different updates, the other rows written
    at the end) gives the bits of one row per call, which computes every margin and
    update."""
    rng = np.random.default_rng(seed)
    K, d, n = 7, 5, 400
    W = np.zeros((K, d))
    W[3:5] = rng.normal(size=d)  # runs: rows 0-2 (zero), 3-4, 5-6 (zero)
    W[2, 0] = -0.0  # bit-different from +0.0: its own run
    tau = rng.random((K, K))
    tau /= tau.sum(axis=1, keepdims=True)
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    tasks = rng.integers(0, K, n)
    if sparse:
        X[rng.random(X.shape) < 0.4] = 0.0
    W1, tau1 = W.copy(), tau.copy()
    batch = amlc_rows(W1, tau1, X, y, tasks, n, sparse)
    W2, tau2 = W.copy(), tau.copy()
    single = amlc_rows(W2, tau2, X, y, tasks, 1, sparse)
    assert batch.tobytes() == single.tobytes()
    assert W1.tobytes() == W2.tobytes()
    assert tau1.tobytes() == tau2.tobytes()
    assert len({row.tobytes() for row in W1}) > 1  # the runs did split


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_rows_equal_to_the_end_of_a_pass_get_every_update(sparse: bool) -> None:
    """Under sharing by the label, rows of W that start equal stay equal: the pass
    updates one row per run and writes the others when it ends. They hold what one
    row per call (every row updated) gives, and they moved."""
    rng = np.random.default_rng(7)
    K, d, n = 5, 6, 300
    W = np.zeros((K, d))
    tau = np.full((K, K), 1.0 / K)
    X = rng.normal(size=(n, d))
    if sparse:
        X[rng.random(X.shape) < 0.4] = 0.0
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    tasks = rng.integers(0, K, n)
    W1, tau1, W2, tau2 = W.copy(), tau.copy(), W.copy(), tau.copy()
    batch = amlc_rows(W1, tau1, X, y, tasks, n, sparse, share_label=True)
    single = amlc_rows(W2, tau2, X, y, tasks, 1, sparse, share_label=True)
    assert batch.tobytes() == single.tobytes()
    assert W1.tobytes() == W2.tobytes()
    assert tau1.tobytes() == tau2.tobytes()
    assert len({row.tobytes() for row in W1}) == 1  # one run to the end
    assert np.abs(W1).sum() > 1.0  # which learned


def peer_share_rows(
    W: np.ndarray,
    tau: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    u: np.ndarray,
    block: int,
    sparse: bool = False,
) -> np.ndarray:
    """PEER+Share rounds in blocks of ``block`` rows: active when ``u`` holds draws."""
    scores = np.empty(X.shape[0])
    used = 0
    for a in range(0, X.shape[0], block):
        e = min(X.shape[0], a + block)
        call = KernelPass(
            *vector_rows_of(X[a:e], sparse),
            y[a:e].copy(),
            tasks[a:e].copy(),
            u.shape[0] > 0,
            u[used:],
            NO_BUDGET,
            scores[a:e],
            np.zeros(e - a, dtype=np.bool_),
        )
        used += peer_pass(W, tau, call, 1.0, 5.0, True)[0]
    return scores


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("active", [False, True], ids=["labelled", "active"])
@pytest.mark.parametrize("seed", range(3))
def test_peer_share_runs_of_equal_rows_give_the_results_of_k_margins(
    seed: int, active: bool, sparse: bool
) -> None:
    """As for AMLC: PEER+Share on a large batch (one margin per run of equal rows,
    runs split by the task's own steps, the peers' answers and margins of 0) gives
    the bits of one-row calls."""
    rng = np.random.default_rng(seed)
    K, d, n = 6, 4, 300
    W = np.zeros((K, d))
    W[4:] = rng.normal(size=d)
    tau = np.full((K, K), 1.0 / (K - 1))
    np.fill_diagonal(tau, 0.0)
    X = rng.normal(size=(n, d))
    X[::7] = 0.0  # margins of exactly 0
    if sparse:
        X[rng.random(X.shape) < 0.4] = 0.0
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    tasks = rng.integers(0, K, n)
    u = rng.random(2 * n) if active else np.zeros(0)
    W1, tau1, W2, tau2 = W.copy(), tau.copy(), W.copy(), tau.copy()
    batch = peer_share_rows(W1, tau1, X, y, tasks, u, n, sparse)
    single = peer_share_rows(W2, tau2, X, y, tasks, u, 1, sparse)
    assert batch.tobytes() == single.tobytes()
    assert W1.tobytes() == W2.tobytes()
    assert tau1.tobytes() == tau2.tobytes()
    distinct = len({row.tobytes() for row in W1})
    assert distinct > 1  # the runs did split
    if not active:
        assert distinct < K  # and some rows stayed equal to the end of the pass


def test_large_rates_weigh_in_log_space() -> None:
    """Above LOG_SPACE_RATES_ABOVE every product ``tau_km exp(-C l_km / lambda)`` of this
    row underflows to 0 (the renormalisation divided by 0). In log space the row is the
    same once renormalised, its largest weight 1: the weight goes to the task of least
    ``C l_km / lambda - log tau_km``, as in numpy."""
    losses = np.array([0.5, 1.0, 2.0])
    lam = float(losses.sum())
    rate = 1e4
    assert rate > LOG_SPACE_RATES_ABOVE
    assert (np.ones(3) * np.exp(-rate * losses / lam)).sum() == 0.0
    tau = np.ones((2, 3))
    total = _reweigh(tau, 1, losses, rate, lam, -1)
    assert total == 1.0 and tau[1].tolist() == [1.0, 0.0, 0.0]
    np.testing.assert_array_equal(
        tau[1] * (3.0 / total), committee_update(np.ones(3), losses, rate, 3.0)
    )
    # the task of least loss has weight 0 and the next one's product is subnormal: the
    # plain product renormalised overflows to inf and NaN; in log space it is [0, 1, 0, 0]
    losses = np.array([10.24, 1.28, 5.95, 0.0])
    row = np.array([0.0, 1.0, 0.0, 0.0])
    tau = row[None, :].copy()
    with np.errstate(over="ignore"):
        assert np.isinf(1.0 / (row * np.exp(-rate * losses / losses.sum())).sum())
    assert _reweigh(tau, 0, losses, rate, float(losses.sum()), -1) == 1.0
    assert tau[0].tolist() == row.tolist()
    np.testing.assert_array_equal(committee_update(row, losses, rate), row)


def test_log_space_weights_are_the_plain_ones_to_rounding() -> None:
    """At a rate where both forms hold, the renormalised rows agree to rounding, skipped
    task included."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        losses = rng.random(6) * 2.0
        losses[rng.random(6) < 0.3] = 0.0
        lam = float(losses.sum())
        row = rng.random(6) + 0.01
        plain, logs = row[None, :].copy(), row[None, :].copy()
        _exp_weights_plain(plain, 0, losses, 650.0, lam, 2)
        total = _exp_weights_log(logs, 0, losses, 650.0, lam, 2)
        assert logs[0, 2] == row[2]
        keep = np.arange(6) != 2
        want = plain[0, keep] / plain[0, keep].sum()
        np.testing.assert_allclose(logs[0, keep] / total, want, rtol=1e-12, atol=1e-300)


def test_amlc_with_a_large_rate_learns_a_batch() -> None:
    """``C = 1e6`` on rows of W that differ (sharing by the prediction), where the plain
    products of committee rows underflow to 0: no division by 0, finite scores,
    committee rows that sum to 1."""
    model = learners.make("amlc", n_features=5, n_tasks=3, C=1e6, faithful="paper",
                          share_test="prediction")  # fmt: skip
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 5))
    y = np.where(rng.random(300) < 0.5, 1.0, -1.0)
    scores = model.score_and_learn_many(X, y, rng.integers(0, 3, 300))
    assert np.isfinite(scores).all()
    np.testing.assert_allclose(model.tau_.sum(axis=1), 1.0, rtol=1e-12)
    assert len({row.tobytes() for row in model.W_}) == 3


@pytest.mark.parametrize(
    "check", [check_kernel_matches_reference, check_input_forms_agree, check_state_round_trip]
)
def test_a_large_rate_passes_the_conformance_checks_of_its_numbers(check: Any) -> None:
    """The log-space weights of the compiled pass are the numpy reference's, whatever the
    input form, through a state round trip (at such a rate the committee follows one task,
    and learns a related stream too slowly for the suite's learning check)."""
    check(
        lambda: learners.make(
            "amlc", n_features=10, n_tasks=4, C=1e4, faithful="paper", share_test="prediction"
        )
    )
