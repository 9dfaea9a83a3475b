"""OMTL learners (saha2011 Algorithm 1): hand-worked steps, a dense reference loop, invariants."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.linalg as la
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.checks import related_tasks
from learners.omtl import TaskRelationships

OMTL = ("omtl-logdet", "omtl-vonneumann", "omtl-cov", "batchopt")


def _make(name: str, K: int = 3, d: int = 5, seed: int = 0, **params: Any) -> TaskRelationships:
    learner = learners.make(name, n_features=d, n_tasks=K, seed=seed, **params)
    assert isinstance(learner, TaskRelationships)
    return learner


def test_logdet_hand_worked_steps() -> None:
    """omtl-logdet, K = 2, d = 2, epoch_rounds = 2, eta = 0.5 (absolute), unit trace.

    Priming: A = I/2, A^{-1} = 2 I.
    t=1: x=(1,0), y=-1, task 0: score 0 -> +1, mistake. t < 2: weights only,
         w0 = -2 (1,0) = (-2,0). G = [[4,0],[0,0]].
    t=2: x=(0,1), y=+1, task 1: score 0 -> +1, correct.
    t=3: x=(1,1), y=-1, task 1: score 0 -> +1, mistake. w_j += -(A^{-1})_{j,1} x:
         w1 = (-2,-2). G = [[4,4],[4,8]].  Eq. 3.7 (post W): A^{-1} = 2I + 0.5 G =
         [[4,2],[2,6]], A = [[6,-2],[-2,4]]/20 = [[.3,-.1],[-.1,.2]], trace .5 ->
         A = [[.6,-.2],[-.2,.4]], A^{-1} = [[2,1],[1,3]].
    t=4: x=(0,1), y=-1, task 0: score 0 -> +1, mistake. w0 -= 2 (0,1), w1 -= 1 (0,1):
         w0 = (-2,-2), w1 = (-2,-3). G = [[8,10],[10,13]]. A^{-1} = [[2,1],[1,3]] + 0.5 G =
         [[6,6],[6,9.5]], det 21, A = [[9.5,-6],[-6,6]]/21, trace 15.5/21 ->
         A = [[9.5,-6],[-6,6]]/15.5, A^{-1} = [[6,6],[6,9.5]] * 15.5/21.
    """
    m = _make("omtl-logdet", K=2, d=2, epoch_rounds=2, eta=0.5, eta_scale="absolute")
    m.learn_one(np.array([1.0, 0.0]), -1, 0)
    m.learn_one(np.array([0.0, 1.0]), 1, 1)
    np.testing.assert_array_equal(m.relation_matrix(), np.eye(2) / 2)
    m.learn_one(np.array([1.0, 1.0]), -1, 1)
    np.testing.assert_allclose(m.W_, [[-2, 0], [-2, -2]])
    np.testing.assert_allclose(m.relation_matrix(), [[0.6, -0.2], [-0.2, 0.4]], rtol=1e-12)
    np.testing.assert_allclose(m.Ainv_, [[2, 1], [1, 3]], rtol=1e-12)
    m.learn_one(np.array([0.0, 1.0]), -1, 0)
    np.testing.assert_allclose(m.W_, [[-2, -2], [-2, -3]], rtol=1e-12)
    np.testing.assert_allclose(m.relation_matrix(), np.array([[9.5, -6], [-6, 6]]) / 15.5)
    np.testing.assert_allclose(m.Ainv_, np.array([[6, 6], [6, 9.5]]) * 15.5 / 21, rtol=1e-12)
    assert (m.n_rounds_, m.n_mistakes_, m.n_a_updates_) == (4, 3, 2)
    assert m.decision_one(np.array([1.0, 0.0]), 1) == pytest.approx(-2.0)


def test_logdet_pre_update_weights() -> None:
    """a_update_uses='pre' feeds W_{s-1} (Eqs. 3.7-3.10 as written). Same stream as above:
    at t=3 the Gram before the weight update is diag(4, 0): A^{-1} = 2I + 0.5 diag(4,0) =
    diag(4,2), A = diag(1/4,1/2)/(3/4) = diag(1/3, 2/3), A^{-1} = diag(3, 1.5)."""
    m = _make(
        "omtl-logdet", K=2, d=2, epoch_rounds=2, eta=0.5, eta_scale="absolute", a_update_uses="pre"
    )
    for x, y, t in (((1.0, 0.0), -1, 0), ((0.0, 1.0), 1, 1), ((1.0, 1.0), -1, 1)):
        m.learn_one(np.array(x), y, t)
    np.testing.assert_allclose(m.relation_matrix(), np.diag([1 / 3, 2 / 3]), rtol=1e-12)
    np.testing.assert_allclose(m.Ainv_, np.diag([3.0, 1.5]), rtol=1e-12)


def test_covariance_hand_worked_step() -> None:
    """omtl-cov, K = 2, d = 2, epoch_rounds = 1, literal reading (A = cov(W) / trace).

    t=1: x=(1,0), y=-1, task 0: mistake; A^{-1} = 2I, so w0 = (-2,0), w1 = (0,0). cov of
    the paper's d x K matrix [[-2,0],[0,0]] (rows = coordinates): task 0 has values (-2,0),
    variance ((-1)^2 + 1^2)/(2-1) = 2; task 1 is constant: C = diag(2, 0), singular.
    ridge 0: A = diag(1, 0), floored at 1e-12 -> A^{-1} = diag(1, 1e12).
    ridge 1e-6: eps = 1e-6 * tr(C)/2 = 1e-6, A = diag(2+1e-6, 1e-6) / (2+2e-6).
    """
    m = _make("omtl-cov", K=2, d=2, epoch_rounds=1, ridge=0.0)
    m.learn_one(np.array([1.0, 0.0]), -1, 0)
    np.testing.assert_allclose(m.relation_matrix(), np.diag([1.0, 1e-12]), rtol=1e-9, atol=0)
    np.testing.assert_allclose(m.Ainv_, np.diag([1.0, 1e12]), rtol=1e-9)
    m = _make("omtl-cov", K=2, d=2, epoch_rounds=1)
    m.learn_one(np.array([1.0, 0.0]), -1, 0)
    expected = np.diag([2 + 1e-6, 1e-6]) / (2 + 2e-6)
    np.testing.assert_allclose(m.relation_matrix(), expected, rtol=1e-9, atol=0)
    np.testing.assert_allclose(m.Ainv_, np.diag(1 / np.diag(expected)), rtol=1e-9)


# ---------------------------------------------------------------- dense reference
def _reference_interaction(
    name: str, A: np.ndarray, Ainv: np.ndarray, W: np.ndarray, eta: float
) -> tuple[np.ndarray, np.ndarray]:
    """One A update with scipy's dense matrix functions, straight from the equations."""
    G = W @ W.T  # the paper's W^T W with W (d x K)
    if name == "omtl-logdet":
        A = la.inv(Ainv + eta / np.trace(G) * G)
    elif name == "omtl-vonneumann":
        A = np.real(la.expm(np.real(la.logm(A)) - eta / np.trace(G) * G))
    elif name == "omtl-cov":
        C = np.cov(W.T, rowvar=False)
        A = C + 1e-6 * np.trace(C) / C.shape[0] * np.eye(C.shape[0])
    else:
        S = np.real(la.sqrtm(G))
        S = S / np.trace(S)
        A = S + 1e-6 * np.trace(S) / S.shape[0] * np.eye(S.shape[0])
    A = A / np.trace(A)
    return A, la.inv(A)


def _reference_run(name: str, stream: Any, K: int, epoch: int, eta: float) -> np.ndarray:
    """Algorithm 1 as a plain dense loop; returns the score of every round."""
    W = np.zeros((K, stream.X.shape[1]))
    A, Ainv = np.eye(K) / K, K * np.eye(K)
    scores = []
    for t, (x, y, task) in enumerate(stream, start=1):
        s = float(W[task] @ x)
        scores.append(s)
        if (1 if s >= 0 else -1) != y:
            for j in range(K):
                W[j] += y * Ainv[j, task] * x
            if t >= epoch:
                A, Ainv = _reference_interaction(name, A, Ainv, W, eta)
    return np.array(scores)


@pytest.mark.parametrize("name", OMTL)
def test_matches_a_dense_reference_loop(name: str) -> None:
    """Scores over a 600-round stream equal the dense loop's (scipy inv/logm/expm/sqrtm/cov)."""
    stream = related_tasks(n=600, n_tasks=3, n_features=5, relatedness=1.0, seed=11)
    learns_eta = name in ("omtl-logdet", "omtl-vonneumann")
    m = _make(name, epoch_rounds=200, **({"eta": 0.05} if learns_eta else {}))
    got = []
    for x, y, t in stream:
        got.append(m.decision_one(x, t))
        m.learn_one(x, y, t)
    expected = _reference_run(name, stream, 3, 200, 0.05)
    assert m.n_a_updates_ > 10
    np.testing.assert_allclose(np.array(got), expected, rtol=1e-7, atol=1e-9)


# ---------------------------------------------------------------- invariants
def test_incremental_gram_equals_direct_product_over_a_long_stream() -> None:
    """G_ = W W^T and colsum_ = W 1 to 1e-9 (relative) after 20,000 rounds of row, batch and
    sparse updates, with A changing after round 2,000."""
    stream = related_tasks(n=20_000, n_tasks=4, n_features=8, relatedness=1.0, noise=0.0, seed=3)
    for name in ("omtl-logdet", "omtl-cov"):
        m = _make(name, K=4, d=8, epoch_rounds=2_000)
        m.learn_many(stream.X[:1_000], stream.y[:1_000], stream.task[:1_000])  # fast path
        X = stream.X.copy()
        X[:, ::3] = 0.0  # sparse rows
        for x, y, t in zip(X[1_000:], stream.y[1_000:].tolist(), stream.task[1_000:].tolist()):
            nz = np.flatnonzero(x)
            m.learn_one((nz, x[nz]), y, t)
        assert m.n_a_updates_ > 100
        direct = m.W_ @ m.W_.T
        scale = np.abs(direct).max()
        np.testing.assert_allclose(m.G_, direct, rtol=0, atol=1e-9 * scale)
        np.testing.assert_allclose(m.colsum_, m.W_.sum(axis=1), rtol=0, atol=1e-9 * scale**0.5)


@pytest.mark.parametrize("name", OMTL)
@pytest.mark.parametrize("params", [{"epoch": 1.0, "expected_rounds": 1500}, {}])
def test_epoch_one_or_unknown_length_is_ipl(name: str, params: dict[str, Any]) -> None:
    """EPOCH = 1 (or no stream length at all): A stays I/K, steps are K y x, so every
    prediction equals ipl's and every score is K times ipl's."""
    stream = related_tasks(n=1500, n_tasks=3, n_features=5, seed=5)
    m = _make(name, **params)
    ipl = learners.make("ipl", n_features=5, n_tasks=3)
    for x, y, t in stream:
        assert m.predict_one(x, t) == ipl.predict_one(x, t)
        assert m.decision_one(x, t) == pytest.approx(3.0 * ipl.decision_one(x, t), rel=1e-12)
        m.learn_one(x, y, t)
        ipl.learn_one(x, y, t)
    assert m.n_a_updates_ <= 1  # at most at the very last round (t = EPOCH = 1500)


def test_logdet_with_zero_eta_keeps_the_priming_matrix() -> None:
    """eta = 0: A^{-1} <- A^{-1} + 0, unit trace already: A stays I/K (algorithms.md Sec. 10)."""
    stream = related_tasks(n=800, n_tasks=3, n_features=5, seed=6)
    m = _make("omtl-logdet", epoch_rounds=1, eta=0.0)
    for x, y, t in stream:
        m.learn_one(x, y, t)
    assert m.n_a_updates_ > 0
    np.testing.assert_allclose(m.Ainv_, 3.0 * np.eye(3), rtol=1e-12)


def test_epoch_fraction_sets_the_switch_round() -> None:
    """EPOCH = ceil(epoch * expected_rounds); epoch_rounds overrides; unknown length: never."""
    assert _make("omtl-cov", epoch=0.5, expected_rounds=201).epoch_round == 101
    assert _make("omtl-cov", epoch=0.5, expected_rounds=201, epoch_rounds=7).epoch_round == 7
    assert _make("omtl-cov").epoch_round is None
    with pytest.raises(ValueError, match="epoch"):
        _make("omtl-cov", epoch=1.5)


@pytest.mark.parametrize("name", ["omtl-logdet", "batchopt"])
def test_active_query_probability(name: str) -> None:
    """query_one draws Z ~ Bernoulli(b/(b+|r|)), b = sum_j |A_{i_t,j}| (Sec. 4) or the fixed
    sampling_b, from the learner's own generator; every call counts a round."""
    stream = related_tasks(n=400, n_tasks=3, n_features=5, seed=7)
    m = _make(name, epoch_rounds=50, active=True, sampling_b=None, seed=42)
    twin = np.random.Generator(np.random.PCG64(42))
    for i, (x, y, t) in enumerate(stream):
        b = np.abs(m.relation_matrix()[t]).sum()
        p = b / (b + abs(m.decision_one(x, t)))
        assert m.query_one(x, t) == (twin.random() < p)
        assert m.n_rounds_ == i + 1
        if i % 2:
            m.learn_one(x, y, t)  # a label consumed does not count a second round
        assert m.n_rounds_ == i + 1
    assert m.n_a_updates_ > 0
    fixed = _make(name, active=True, sampling_b=2.0, seed=1)
    twin = np.random.Generator(np.random.PCG64(1))
    fixed.learn_one(np.ones(5), 1, 0)  # score 0 predicts +1: correct, no update
    fixed.learn_one(np.ones(5), -1, 0)  # mistake: w0 = -(A^{-1})_{00} x = -3 * ones
    r = abs(fixed.decision_one(np.ones(5), 0))
    assert r == pytest.approx(15.0)
    assert fixed.query_one(np.ones(5), 0) == (twin.random() < 2.0 / (2.0 + r))


def test_new_task_enters_independent_at_the_current_scale() -> None:
    """add_task: zero off-diagonals, diagonal tr(A)/K, A^{-1} the matching reciprocal."""
    stream = related_tasks(n=500, n_tasks=3, n_features=5, relatedness=1.0, seed=8)
    for name in OMTL:
        m = _make(name, epoch_rounds=100)
        for x, y, t in stream:
            m.learn_one(x, y, t)
        A_old, Ainv_old = m.relation_matrix(), m.Ainv_.copy()
        assert m.n_a_updates_ > 0
        assert m.add_task() == 3
        A = m.relation_matrix()
        np.testing.assert_array_equal(A[:3, :3], A_old)
        np.testing.assert_array_equal(m.Ainv_[:3, :3], Ainv_old)
        assert A[3, 3] == pytest.approx(np.trace(A_old) / 3)
        assert m.Ainv_[3, 3] == pytest.approx(1.0 / A[3, 3])
        assert not A[3, :3].any() and not A[:3, 3].any()
        assert not m.Ainv_[3, :3].any() and not m.Ainv_[:3, 3].any()
        assert not m.G_[3].any() and m.colsum_[3] == 0.0


@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(OMTL),
    seed=st.integers(0, 10_000),
    log_eta=st.floats(-5.0, 1.5),
    K=st.integers(1, 4),
    normalize=st.booleans(),
    as_inverse=st.booleans(),
)
def test_a_stays_spd_finite_and_unit_trace_on_random_streams(
    name: str, seed: int, log_eta: float, K: int, normalize: bool, as_inverse: bool
) -> None:
    """After every mistake on a random stream A is finite, symmetric, positive definite, the
    inverse of A^{-1}, and has unit trace when renormalising (A^{-1} mean diagonal K when the
    covariance is read as A^{-1})."""
    rng = np.random.default_rng(seed)
    params: dict[str, Any] = {
        "epoch_rounds": int(rng.integers(1, 40)),
        "normalize_trace": normalize,
    }
    if name in ("omtl-logdet", "omtl-vonneumann"):
        params["eta"] = 10.0**log_eta
    else:
        params["cov_is_A_inverse"] = as_inverse and (normalize or name == "batchopt")
    m = _make(name, K=K, d=4, seed=seed, **params)
    for _ in range(150):
        x = rng.normal(size=4)
        m.learn_one(x, 1 if rng.random() < 0.5 else -1, int(rng.integers(K)))
    A, Ainv = m.relation_matrix(), m.Ainv_
    assert np.isfinite(A).all() and np.isfinite(Ainv).all()
    assert np.array_equal(A, A.T)
    assert np.linalg.eigvalsh(A)[0] > 0.0
    assert m.n_a_updates_ > 0
    if normalize or name == "batchopt":
        if params.get("cov_is_A_inverse"):
            assert np.trace(Ainv) == pytest.approx(K * K, rel=1e-9)
        else:
            assert np.trace(A) == pytest.approx(1.0, rel=1e-9)
    cond = np.linalg.cond(A)
    np.testing.assert_allclose(A @ Ainv, np.eye(K), atol=1e-13 * cond + 1e-9)


# ---------------------------------------------------------------- A update cadence
def test_logdet_every_second_mistake_hand_worked() -> None:
    """a_update_every = 2 on the stream of test_logdet_hand_worked_steps, one round longer.

    Mistakes 1, 2, 3 fall at rounds 1, 3, 4. Round 3 (count 2, a multiple of 2) updates A
    as there: A = [[.6,-.2],[-.2,.4]], A^{-1} = [[2,1],[1,3]]. Round 4 (count 3) takes the
    same weight step, w0 = (-2,-2), w1 = (-2,-3), and leaves A as it is.
    t=5: x=(1,0), y=+1, task 0: score -2, mistake 4. w_j += (A^{-1})_{j,0} x: w0 = (0,-2),
         w1 = (-1,-3). G = [[4,6],[6,10]]. A^{-1} = [[2,1],[1,3]] + 0.5 G = [[4,4],[4,8]],
         det 16, A = [[8,-4],[-4,4]]/16, trace 0.75 -> A = [[2,-1],[-1,1]]/3,
         A^{-1} = [[4,4],[4,8]] * 0.75 = [[3,3],[3,6]].
    """
    m = _make("omtl-logdet", K=2, d=2, epoch_rounds=2, eta=0.5, eta_scale="absolute",
              a_update_every=2)  # fmt: skip
    m.learn_one(np.array([1.0, 0.0]), -1, 0)
    m.learn_one(np.array([0.0, 1.0]), 1, 1)
    m.learn_one(np.array([1.0, 1.0]), -1, 1)
    np.testing.assert_allclose(m.relation_matrix(), [[0.6, -0.2], [-0.2, 0.4]], rtol=1e-12)
    m.learn_one(np.array([0.0, 1.0]), -1, 0)
    np.testing.assert_allclose(m.W_, [[-2, -2], [-2, -3]], rtol=1e-12)
    np.testing.assert_allclose(m.relation_matrix(), [[0.6, -0.2], [-0.2, 0.4]], rtol=1e-12)
    assert (m.n_mistakes_, m.n_a_updates_) == (3, 1)
    m.learn_one(np.array([1.0, 0.0]), 1, 0)
    np.testing.assert_allclose(m.W_, [[0, -2], [-1, -3]], rtol=1e-12)
    np.testing.assert_allclose(m.relation_matrix(), np.array([[2, -1], [-1, 1]]) / 3, rtol=1e-12)
    np.testing.assert_allclose(m.Ainv_, [[3, 3], [3, 6]], rtol=1e-12)
    assert (m.n_rounds_, m.n_mistakes_, m.n_a_updates_) == (5, 4, 2)
