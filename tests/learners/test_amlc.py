"""AMLC (xu2018, Algorithm 1): hand-worked rounds, a dense reference loop, invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.amlc.committee import committee_update, grow_committee

RAW = {"append_bias": False, "l2_normalize": False}


def twin_draws(seed: int, n: int) -> list[float]:
    """The first ``n`` uniform draws of a learner built with ``seed`` (PCG64)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    return [float(rng.random()) for _ in range(n)]


def test_three_rounds_of_algorithm_1_by_hand():
    """Three rounds of Algorithm 1 as printed (paper's sharing test ``SGN(p_km) != y_hat``).

    K = 3 tasks, d = 2, no preprocessing, b = 1, C = ln 4 (so that
    ``exp(-C l / lambda) = 4^(-l / lambda)``), ``tau^(0) = 1/3``, ``W^(0) = 0``.

    Round 1, task 0, x = (1, 0), y = -1.
      f = (0, 0, 0); p = 0; y_hat = SGN(0) = +1; query probability 1/(1+0) = 1.
      Mistake: w_0 = (-1, 0). Losses (1, 1, 1), lambda = 3: equal factors, tau_0 stays 1/3.
      Sharing: SGN(f_m) = +1 = y_hat for both peers: nobody.
    Round 2, task 1, x = (1, 1), y = -1.
      f = (-1, 0, 0); p = -1/3; y_hat = -1 = y (no mistake); query probability 3/4.
      Losses (0, 1, 1), lambda = 2: factors (1, 1/2, 1/2): tau_1 = (1/3, 1/6, 1/6) / (2/3)
      = (1/2, 1/4, 1/4). Sharing (updated tau): peer 0 has SGN(-1) = y_hat: no; peer 2 has
      SGN(0) = +1 != y_hat and tau_12 = 1/4 >= tau_11 = 1/4: w_2 += y x = (-1, -1).
    Round 3, task 2, x = (0, 1), y = +1.
      f = (0, 0, -1); p = -1/3; y_hat = -1 != y: w_2 = (-1, -1) + (0, 1) = (-1, 0).
      Losses (1, 1, 2), lambda = 4: factors (4^(-1/4), 4^(-1/4), 4^(-1/2)) = (1/sqrt2, 1/sqrt2,
      1/2): tau_2 = (1/sqrt2, 1/sqrt2, 1/2) / (sqrt2 + 1/2) = (0.369398, 0.369398, 0.261204).
      Sharing: peers 0 and 1 have SGN(0) = +1 != y_hat = -1 and weight 0.3694 >= 0.2612:
      w_0 = (-1, 1), w_1 = (0, 1).
    Finally row 2 of tau W = 0.369398 (-1, 1) + 0.369398 (0, 1) + 0.261204 (-1, 0)
    = (-0.630602, 0.738796).
    """
    amlc = learners.make(
        "amlc",
        n_features=2,
        n_tasks=3,
        seed=11,
        C=math.log(4.0),
        faithful="paper",
        share_test="prediction",
        **RAW,
    )
    draws = twin_draws(11, 3)
    x1, x2, x3 = np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([0.0, 1.0])

    assert amlc.decision_one(x1, 0) == 0.0
    assert amlc.query_one(x1, 0) is True  # probability 1
    amlc.learn_one(x1, -1, 0)
    np.testing.assert_array_equal(amlc.W_, [[-1, 0], [0, 0], [0, 0]])
    np.testing.assert_allclose(amlc.relation_matrix(), np.full((3, 3), 1 / 3), rtol=1e-15)

    assert amlc.decision_one(x2, 1) == pytest.approx(-1 / 3, rel=1e-15)
    assert amlc.query_one(x2, 1) is (draws[1] < 3 / 4)
    amlc.learn_one(x2, -1, 1)
    np.testing.assert_array_equal(amlc.W_, [[-1, 0], [0, 0], [-1, -1]])
    np.testing.assert_allclose(amlc.tau_[1], [1 / 2, 1 / 4, 1 / 4], rtol=1e-15)

    assert amlc.decision_one(x3, 2) == pytest.approx(-1 / 3, rel=1e-15)
    assert amlc.query_one(x3, 2) is (draws[2] < 3 / 4)
    amlc.learn_one(x3, 1, 2)
    np.testing.assert_array_equal(amlc.W_, [[-1, 1], [0, 1], [-1, 0]])
    s2 = math.sqrt(2.0)
    expected_row = np.array([1 / s2, 1 / s2, 1 / 2]) / (s2 + 1 / 2)
    np.testing.assert_allclose(amlc.tau_[2], expected_row, rtol=1e-14)
    np.testing.assert_allclose(amlc.tau_[2], [0.369398, 0.369398, 0.261204], atol=1e-6)
    np.testing.assert_allclose(amlc.task_weights()[2], [-0.630602, 0.738796], atol=1e-6)
    np.testing.assert_allclose(amlc.tau_[0], [1 / 3] * 3, rtol=1e-15)
    assert amlc.n_queries_ == 1 + (draws[1] < 3 / 4) + (draws[2] < 3 / 4)


def test_same_rounds_with_the_label_sharing_test():
    """The same three rounds with the default sharing test ``SGN(p_km) != y`` (resolution #7).

    Round 1: y_hat = +1 != y = -1 so w_0 = (-1, 0); both peers have SGN(0) = +1 != y and
      equal weights: they are corrected too, W = (-1, 0) in every row. tau unchanged.
    Round 2 (task 1, x = (1, 1), y = -1): f = (-1, -1, -1), p = -1, correct; every loss is
      (1 - 1)_+ = 0, so lambda = 0 and the tau update is skipped; no peer errs: no change.
    Round 3 (task 2, x = (0, 1), y = +1): f = 0, p = 0, y_hat = +1 = y; losses all 1: tau
      unchanged; no peer errs: no change. W stays (-1, 0) in every row, tau uniform.
    """
    amlc = learners.make(
        "amlc", n_features=2, n_tasks=3, seed=11, C=math.log(4.0), faithful="paper", **RAW
    )
    for x, y, t in (([1.0, 0.0], -1, 0), ([1.0, 1.0], -1, 1), ([0.0, 1.0], 1, 2)):
        amlc.learn_one(np.array(x), y, t)
    np.testing.assert_array_equal(amlc.W_, [[-1, 0]] * 3)
    np.testing.assert_array_equal(amlc.tau_, np.full((3, 3), 1 / 3))


def test_committee_update_skips_all_zero_losses_and_keeps_zero_loss_weights():
    """lambda = 0 leaves the row unchanged; tasks without loss keep their pre-normalisation weight."""
    row = np.array([0.5, 0.3, 0.2])
    np.testing.assert_array_equal(committee_update(row, np.zeros(3), 5.0), row)
    out = committee_update(row, np.array([0.0, 2.0, 0.0]), math.log(2.0))
    # factors (1, 1/2, 1): (0.5, 0.15, 0.2) / 0.85
    np.testing.assert_allclose(out, np.array([0.5, 0.15, 0.2]) / 0.85, rtol=1e-15)
    np.testing.assert_allclose(committee_update(row, np.ones(3), 1.0, row_sum=3.0).sum(), 3.0)


def reference_amlc(
    X: np.ndarray,
    y: np.ndarray,
    tasks: np.ndarray,
    K: int,
    *,
    seed: int,
    b: float,
    C: float,
    code: bool,
    share_by_label: bool,
) -> tuple[list[bool], np.ndarray, np.ndarray]:
    """Algorithm 1 written as plain loops over tasks (bias and L2 preprocessing included).

    Returns the query decisions, W and tau. ``code`` switches to the authors' code:
    tau starts at 1 with rows renormalised to K, losses clipped at 2, SGN(0) = -1.
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    d = X.shape[1] + 1
    W = [[0.0] * d for _ in range(K)]
    tau = [[1.0 if code else 1.0 / K] * K for _ in range(K)]
    row_sum = float(K) if code else 1.0
    tie = -1.0 if code else 1.0
    asked = []
    for x_raw, label, k in zip(X, y, tasks, strict=True):
        x = [*list(x_raw), 1.0]
        norm = math.sqrt(sum(v * v for v in x))
        x = [v / norm for v in x]
        f = [sum(W[m][i] * x[i] for i in range(d)) for m in range(K)]
        p = sum(tau[k][m] * f[m] for m in range(K))
        ask = rng.random() < b / (b + abs(p))
        asked.append(bool(ask))
        if not ask:
            continue
        y_hat = 1.0 if p > 0 else (-1.0 if p < 0 else tie)
        if y_hat != label:
            W[k] = [W[k][i] + label * x[i] for i in range(d)]
        losses = [max(0.0, 1.0 - label * f[m]) for m in range(K)]
        if code:
            losses = [min(2.0, v) for v in losses]
        lam = sum(losses)
        if lam != 0.0:
            scaled = [tau[k][m] * math.exp(-C * losses[m] / lam) for m in range(K)]
            tau[k] = [v * row_sum / sum(scaled) for v in scaled]
        target = label if share_by_label else y_hat
        for m in range(K):
            sign_m = 1.0 if f[m] > 0 else (-1.0 if f[m] < 0 else tie)
            if m != k and sign_m != target and tau[k][m] >= tau[k][k] * (1 - 1e-9):
                W[m] = [W[m][i] + label * x[i] for i in range(d)]
    return asked, np.array(W), np.array(tau)


@pytest.mark.parametrize(
    ("faithful", "share_test", "b"),
    [("paper", "label", 1.0), ("paper", "prediction", 0.3), ("code", "label", 1.0)],
)
def test_matches_the_dense_reference_loop(faithful, share_test, b):
    """The vectorised learner takes the same decisions and reaches the same W and tau."""
    rng = np.random.default_rng(3)
    K, d, n = 4, 5, 400
    centre = rng.normal(size=d)
    truths = centre + 0.8 * rng.normal(size=(K, d))
    X = rng.normal(size=(n, d))
    tasks = rng.integers(K, size=n)
    y = np.where(np.einsum("ij,ij->i", X, truths[tasks]) >= 0, 1.0, -1.0)
    amlc = learners.make(
        "amlc", n_features=d, n_tasks=K, seed=5, b=b, faithful=faithful, share_test=share_test
    )
    asked = []
    for x, label, t in zip(X, y, tasks.tolist(), strict=True):
        asked.append(amlc.query_one(x, t))
        if asked[-1]:
            amlc.learn_one(x, label, t)
    ref_asked, ref_W, ref_tau = reference_amlc(
        X,
        y,
        tasks,
        K,
        seed=5,
        b=b,
        C=math.log(30.0),
        code=faithful == "code",
        share_by_label=share_test == "label",
    )
    assert asked == ref_asked
    assert 20 < sum(asked) < n
    np.testing.assert_allclose(amlc.W_, ref_W, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(amlc.tau_, ref_tau, rtol=1e-9, atol=1e-12)
    if share_test == "prediction":
        assert np.abs(amlc.relation_matrix() - 1 / K).max() > 1e-3  # tau did move


@settings(max_examples=40, deadline=None)
@given(
    K=st.integers(1, 5),
    C=st.floats(0.0, 20.0),
    faithful=st.sampled_from(["paper", "code"]),
    share_test=st.sampled_from(["label", "prediction"]),
    seed=st.integers(0, 2**16),
    grow_at=st.integers(0, 60),
)
def test_committee_rows_stay_probability_vectors(K, C, faithful, share_test, seed, grow_at):
    """Every row of relation_matrix() is non-negative and sums to 1, before and after add_task."""
    if faithful == "code":
        share_test = "label"
    rng = np.random.default_rng(seed)
    amlc = learners.make(
        "amlc", n_features=3, n_tasks=K, seed=seed, C=C, faithful=faithful, share_test=share_test
    )
    for step in range(60):
        if step == grow_at:
            amlc.add_task()
        x = rng.normal(size=3) * rng.choice([0.1, 1.0, 10.0])
        t = int(rng.integers(amlc.n_tasks))
        amlc.learn_one(x, float(rng.choice([-1.0, 1.0])), t)
        tau = amlc.relation_matrix()
        assert tau.shape == (amlc.n_tasks, amlc.n_tasks)
        assert (tau >= 0).all()
        np.testing.assert_allclose(tau.sum(axis=1), 1.0, rtol=1e-12)
        np.testing.assert_allclose(amlc.task_weights(), amlc.tau_ @ amlc.W_, rtol=1e-12, atol=1e-12)


def test_identical_tasks_keep_a_uniform_committee_and_share_every_queried_mistake():
    """Sec. 3.3: with identical tasks all tau entries are equal and every task learns every
    queried example. Reference: one selective-sampling Perceptron on the pooled stream, whose
    weights every row of W must equal after each round (each queried mistake reached all K).

    The paper's literal test (``SGN(p_km) != y_hat``) is shown for contrast: there the peers
    that erred with the committee are skipped and the committee collapses onto one task.
    """
    rng = np.random.default_rng(7)
    K, d, n = 5, 4, 3000
    truth = rng.normal(size=d)
    X = rng.normal(size=(n, d))
    tasks = rng.integers(K, size=n).tolist()
    y = np.where(X @ truth >= 0, 1.0, -1.0)
    amlc = learners.make("amlc", n_features=d, n_tasks=K, seed=1, faithful="paper")
    pooled = np.zeros(d + 1)
    n_mistakes = 0
    for x, label, t in zip(X, y, tasks, strict=True):
        if amlc.query_one(x, t):
            v = amlc._prepare(x).dense()
            if (1.0 if pooled @ v >= 0 else -1.0) != label:
                pooled += label * v
                n_mistakes += 1
            amlc.learn_one(x, label, t)
        np.testing.assert_allclose(amlc.W_, np.tile(pooled, (K, 1)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(amlc.relation_matrix(), np.full((K, K), 1 / K), rtol=1e-12)
    assert n_mistakes > 20 and amlc.n_queries_ > n_mistakes

    literal = learners.make(
        "amlc", n_features=d, n_tasks=K, seed=1, faithful="paper", share_test="prediction"
    )
    for x, label, t in zip(X, y, tasks, strict=True):
        if literal.query_one(x, t):
            literal.learn_one(x, label, t)
    assert np.abs(literal.relation_matrix() - 1 / K).max() > 0.5


def test_k1_amlc_is_the_selective_sampling_perceptron():
    """With one task tau = [[1]], so AMLC is selective sampling around a Perceptron (b = 1).

    Both run compiled kernels whose sums are ordered differently (learners.kernels,
    learners/amlc/kernels.py): scores agree to rounding, decisions exactly.
    """
    rng = np.random.default_rng(2)
    X = rng.normal(size=(500, 6))
    y = np.where(X @ rng.normal(size=6) + 0.3 * rng.normal(size=500) >= 0, 1.0, -1.0)
    amlc = learners.make("amlc", n_features=6, n_tasks=1, seed=9, faithful="paper")
    selective = learners.make(
        "selective-sampling",
        n_features=6,
        n_tasks=1,
        seed=9,
        base="ipl",
        append_bias=True,
        l2_normalize=True,
    )
    for x, label in zip(X, y, strict=True):
        assert amlc.decision_one(x, 0) == pytest.approx(selective.decision_one(x, 0), rel=1e-12)
        asked = amlc.query_one(x, 0)
        assert asked == selective.query_one(x, 0)
        if asked:
            amlc.learn_one(x, label, 0)
            selective.learn_one(x, label, 0)
    np.testing.assert_allclose(amlc.task_weights(), selective.task_weights(), rtol=1e-12)
    assert 50 < amlc.n_queries_ < 500
    np.testing.assert_array_equal(amlc.relation_matrix(), [[1.0]])


def test_c_zero_keeps_tau_uniform():
    """C = 0: every factor exp(0) = 1, so tau stays 1/K even when the paper's test lets W rows
    diverge (share_test='prediction'); the committee score is then the mean margin."""
    rng = np.random.default_rng(4)
    K = 4
    amlc = learners.make(
        "amlc", n_features=3, n_tasks=K, seed=0, C=0.0, faithful="paper", share_test="prediction"
    )
    for _ in range(500):
        x, t = rng.normal(size=3), int(rng.integers(K))
        amlc.learn_one(x, float(rng.choice([-1.0, 1.0])), t)
    np.testing.assert_allclose(amlc.relation_matrix(), np.full((K, K), 1 / K), rtol=1e-14)
    assert np.ptp(amlc.W_, axis=0).max() > 0.1  # rows differ, yet the weights stay equal
    x = rng.normal(size=3)
    margins = amlc.W_ @ amlc._prepare(x).dense()
    assert amlc.decision_one(x, 2) == pytest.approx(margins.mean(), rel=1e-12)


def test_code_mode_scales_the_committee_by_k():
    """faithful='code': tau rows sum to K, so the score is K times the committee mean."""
    K = 3
    amlc = learners.make("amlc", n_features=2, n_tasks=K, seed=0, faithful="code", **RAW)
    amlc.learn_one(np.array([1.0, 0.0]), -1, 0)  # p = 0 gives y_hat = -1 here: no mistake
    np.testing.assert_array_equal(amlc.W_, np.zeros((K, 2)))
    amlc.learn_one(np.array([1.0, 0.0]), 1, 1)  # mistake; peers SGN(0) = -1 != y: shared
    np.testing.assert_array_equal(amlc.W_, [[1, 0]] * K)
    assert amlc.decision_one(np.array([2.0, 0.0]), 0) == pytest.approx(K * 2.0)
    np.testing.assert_allclose(amlc.tau_.sum(axis=1), K)
    np.testing.assert_allclose(amlc.relation_matrix(), np.full((K, K), 1 / K))


def test_new_task_enters_with_a_uniform_row_and_column():
    """add_task: new row 1/(K+1); every old row gives the new task 1/(K+1) and keeps the rest."""
    tau = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [1 / 3, 1 / 3, 1 / 3]])
    grown = grow_committee(tau)
    np.testing.assert_allclose(grown[3], 0.25)
    np.testing.assert_allclose(grown[:, 3], 0.25)
    np.testing.assert_allclose(grown[:3, :3], tau * 0.75)
    np.testing.assert_allclose(grown.sum(axis=1), 1.0)

    for faithful in ("paper", "code"):
        amlc = learners.make("amlc", n_features=2, n_tasks=2, seed=0, faithful=faithful, C=3.0)
        amlc.learn_one(np.array([1.0, 0.5]), 1, 0)
        amlc.learn_one(np.array([-1.0, 0.5]), 1, 1)
        before = amlc.relation_matrix()
        assert amlc.add_task() == 2
        after = amlc.relation_matrix()
        np.testing.assert_allclose(after[2], 1 / 3)
        np.testing.assert_allclose(after[:, 2], 1 / 3)
        np.testing.assert_allclose(after[:2, :2], before * 2 / 3)
        np.testing.assert_array_equal(amlc.W_[2], 0.0)


def test_code_mode_rejects_the_prediction_sharing_test():
    with pytest.raises(ValueError, match="share_test"):
        learners.make("amlc", n_features=2, n_tasks=2, faithful="code", share_test="prediction")
    with pytest.raises(ValueError, match="faithful='paper'"):
        learners.make("amlc", n_features=2, n_tasks=2, share_test="prediction")


def test_default_is_the_authors_code():
    """The default AMLC is the authors' implementation: tau rows sum to K, SGN(0) = -1 in
    training, and the same decisions as faithful='code' on a stream (docs/algorithms.md
    Sec. 3.5)."""
    K = 3
    default = learners.make("amlc", n_features=2, n_tasks=K, seed=4, **RAW)
    assert default.hyper["faithful"] == "code"
    np.testing.assert_array_equal(default.tau_, np.ones((K, K)))
    default.learn_one(np.array([1.0, 0.0]), -1, 0)  # p = 0 -> y_hat = -1 = y: no update
    np.testing.assert_array_equal(default.W_, np.zeros((K, 2)))
    rng = np.random.default_rng(8)
    code = learners.make("amlc", n_features=2, n_tasks=K, seed=4, faithful="code", **RAW)
    code.learn_one(np.array([1.0, 0.0]), -1, 0)
    for _ in range(200):
        x, t = rng.normal(size=2), int(rng.integers(K))
        assert default.query_one(x, t) == code.query_one(x, t)
        label = float(rng.choice([-1.0, 1.0]))
        default.learn_one(x, label, t)
        code.learn_one(x, label, t)
    np.testing.assert_array_equal(default.W_, code.W_)
    np.testing.assert_array_equal(default.tau_, code.tau_)


def test_code_mode_clips_losses_at_two_after_a_task_joins():
    """faithful='code' with C = ln 8, no preprocessing (hand-worked).

    K = 1: x = (3, 0), y = +1: p = 0 gives y_hat = -1 (code tie): w_0 = (3, 0).
    add_task: tau (code scale, rows sum to K = 2) = [[1, 1], [1, 1]], w_1 = 0.
    Task 1, x = (3, 0), y = -1: f = (9, 0), p = 9, y_hat = +1 != y: w_1 = (-3, 0).
    Losses (1 + 9, 1) = (10, 1), clipped to (2, 1), lambda = 3: factors
    (8^(-2/3), 8^(-1/3)) = (1/4, 1/2), row renormalised to 2: (2/3, 4/3).
    Peer 0 errs (SGN(9) != y) but tau_10 = 2/3 < tau_11 = 4/3: no sharing.
    Without the clip, lambda = 11 and the row would be 2 (8^(-10/11), 8^(-1/11)) / sum.
    """
    amlc = learners.make(
        "amlc", n_features=2, n_tasks=1, seed=0, faithful="code", C=math.log(8.0), **RAW
    )
    x = np.array([3.0, 0.0])
    amlc.learn_one(x, 1, 0)
    np.testing.assert_array_equal(amlc.W_, [[3, 0]])
    amlc.add_task()
    np.testing.assert_array_equal(amlc.tau_, np.ones((2, 2)))
    amlc.learn_one(x, -1, 1)
    np.testing.assert_array_equal(amlc.W_, [[3, 0], [-3, 0]])
    np.testing.assert_allclose(amlc.tau_[1], [2 / 3, 4 / 3], rtol=1e-14)
    np.testing.assert_allclose(amlc.relation_matrix(), [[0.5, 0.5], [1 / 3, 2 / 3]], rtol=1e-14)
