"""The compiled A updates (learners.omtl.a_kernels) against the numpy updates of Eqs. (3.7)-(3.10).

Random Gram matrices and states, every option of every update: the compiled
``(A, A^{-1})`` (and ``log A``) equal the reference to 1e-12 relative to the
largest entry; sums follow numpy's pairwise order bit for bit; a matrix that is
not finite leaves the state untouched and returns False (the learner then runs
the reference). The von Neumann and batch-optimal updates hold ``A`` and
``A^{-1}`` as eigenpairs: a column read from them, and the matrices assembled
later, are the bits of assembling at once. A learner's batch updates A inside the kernel; an overflowing
Gram matrix goes through the numpy update and ends where the reference ends.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.omtl import a_kernels as ak
from learners.omtl import updates

RTOL = 1e-12
#: No eigenvectors to start the von Neumann update from: it decomposes from scratch.
NO_BASIS = np.zeros((0, 0))


def hp(**given: float) -> np.ndarray:
    values = {
        "eta": 0.1,
        "eta_trace": 1.0,
        "normalize": 1.0,
        "floor": 1e-6,
        "ridge": 1e-6,
        "as_inverse": 0.0,
        "n_rows": 50.0,
    }
    values.update(given)
    return np.array([values[name] for name in ak.HP_FIELDS])


def random_state(K: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((K, 50)) * rng.uniform(0.1, 3.0, size=(K, 1))
    B = rng.standard_normal((K, K))
    Ainv = B @ B.T / K + np.eye(K)
    A = np.linalg.inv(Ainv)
    A = (A + A.T) / 2
    L = updates.sym_logm(A, 1e-9)
    return {"G": W @ W.T, "colsum": W.sum(axis=1), "A": A, "Ainv": Ainv, "L": L}


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * scale)


def run_compiled(kind: int, h: np.ndarray, s: dict[str, np.ndarray]) -> tuple[bool, Any]:
    A, Ainv, L = s["A"].copy(), s["Ainv"].copy(), s["L"].copy()
    ok = ak.a_update(kind, h, A, Ainv, L, s["G"], s["colsum"], NO_BASIS, np.full(1, -1))
    return ok, (A, Ainv, L)


def eta_of(h: np.ndarray, G: np.ndarray) -> float:
    return float(h[0] / np.trace(G)) if h[1] else float(h[0])


@pytest.mark.parametrize("K", [1, 2, 3, 10, 31])
@pytest.mark.parametrize("normalize", [0.0, 1.0])
@pytest.mark.parametrize("eta_trace", [0.0, 1.0])
def test_logdet_and_vonneumann_match_the_reference(K: int, normalize: float, eta_trace: float):
    for seed in range(3):
        s = random_state(K, seed)
        h = hp(normalize=normalize, eta_trace=eta_trace, eta=0.3)
        eta = eta_of(h, s["G"])
        ok, (A, Ainv, _) = run_compiled(ak.KIND_LOGDET, h, s)
        want_A, want_Ainv = updates.logdet_update(
            s["Ainv"], s["G"], eta, normalize=bool(normalize), floor=h[3]
        )
        assert ok
        assert_close(A, want_A)
        assert_close(Ainv, want_Ainv)
        ok, (A, Ainv, L) = run_compiled(ak.KIND_VONNEUMANN, h, s)
        want_L, want_A, want_Ainv = updates.vonneumann_log_step(
            s["L"], s["G"], eta, normalize=bool(normalize), floor=h[3]
        )
        assert ok
        assert_close(L, want_L)
        assert_close(A, want_A)
        assert_close(Ainv, want_Ainv)


@pytest.mark.parametrize("K", [1, 2, 3, 10, 31])
@pytest.mark.parametrize("normalize", [0.0, 1.0])
@pytest.mark.parametrize("as_inverse", [0.0, 1.0])
def test_covariance_and_batchopt_match_the_reference(K: int, normalize: float, as_inverse: float):
    for seed in range(3):
        s = random_state(K, seed)
        h = hp(normalize=normalize, as_inverse=as_inverse, ridge=1e-3, floor=1e-4)
        ok, (A, Ainv, _) = run_compiled(ak.KIND_COV, h, s)
        if as_inverse and not normalize:
            continue  # not a learner's combination (OMTLCovariance refuses it)
        want_A, want_Ainv = updates.covariance_update(
            s["G"], s["colsum"], 50, ridge=h[4], normalize=bool(normalize),
            as_inverse=bool(as_inverse), floor=h[3],
        )  # fmt: skip
        assert ok
        assert_close(A, want_A)
        assert_close(Ainv, want_Ainv)
        ok, (A, Ainv, _) = run_compiled(ak.KIND_BATCHOPT, h, s)
        want_A, want_Ainv = updates.batchopt_update(
            s["G"], ridge=h[4], as_inverse=bool(as_inverse), floor=h[3]
        )
        assert ok
        assert_close(A, want_A)
        assert_close(Ainv, want_Ainv)


def test_batchopt_of_a_zero_gram_matrix_is_the_uniform_matrix():
    s = random_state(4, 0)
    s["G"] = np.zeros((4, 4))
    ok, (A, Ainv, _) = run_compiled(ak.KIND_BATCHOPT, hp(), s)
    assert ok
    np.testing.assert_allclose(A, np.eye(4) / 4, rtol=1e-15)
    np.testing.assert_allclose(Ainv, 4 * np.eye(4), rtol=1e-15)


@pytest.mark.parametrize(
    "kind", [ak.KIND_LOGDET, ak.KIND_VONNEUMANN, ak.KIND_COV, ak.KIND_BATCHOPT]
)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_matrix_that_is_not_finite_is_left_to_the_reference(kind: int, bad: float):
    s = random_state(5, 1)
    s["G"][1, 2] = s["G"][2, 1] = bad
    before = {k: v.copy() for k, v in s.items()}
    ok, (A, Ainv, L) = run_compiled(kind, hp(eta_trace=0.0), s)
    assert not ok
    np.testing.assert_array_equal(A, before["A"])
    np.testing.assert_array_equal(Ainv, before["Ainv"])
    np.testing.assert_array_equal(L, before["L"])


def test_no_compiled_update_changes_nothing():
    s = random_state(3, 2)
    ok, (A, Ainv, _) = run_compiled(ak.KIND_NONE, hp(), s)
    assert not ok
    np.testing.assert_array_equal(A, s["A"])
    np.testing.assert_array_equal(Ainv, s["Ainv"])


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 16, 127, 128, 129, 255, 256, 1000, 4099])
def test_sums_and_traces_are_numpys_bit_for_bit(n: int):
    rng = np.random.default_rng(n)
    v = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
    assert ak.pairwise_sum(v) == np.sum(v)
    if n <= 1000:
        M = rng.standard_normal((n, n)) * 10.0 ** rng.integers(-8, 8, (n, n))
        assert ak._trace(M) == np.trace(M)


OMTL = ("omtl-logdet", "omtl-vonneumann", "omtl-cov", "batchopt")


def counting_numpy_updates(learner: Any) -> list[int]:
    """Count the calls of the learner's numpy A update (the kernel's fallback)."""
    calls: list[int] = []
    numpy_update = learner._updated_interaction

    def counted() -> Any:
        calls.append(1)
        return numpy_update()

    learner._updated_interaction = counted
    return calls


@pytest.mark.parametrize("name", OMTL)
@pytest.mark.parametrize("uses", ["post", "pre"])
def test_a_batch_updates_a_inside_the_kernel(name: str, uses: str):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 6))
    tasks = rng.integers(0, 4, size=400)
    y = np.where(rng.random(400) < 0.5, 1.0, -1.0)
    learner = learners.make(name, n_features=6, n_tasks=4, epoch_rounds=1, a_update_uses=uses)
    calls = counting_numpy_updates(learner)
    learner.score_and_learn_many(X, y, tasks)
    assert calls == []
    assert learner.n_a_updates_ == learner.n_mistakes_ > 50
    for _ in range(3):
        learner.score_and_learn_one(X[0], -1.0 if learner.decision_one(X[0], 0) >= 0 else 1.0, 0)
    assert calls == []
    assert learner.n_a_updates_ == learner.n_mistakes_


@pytest.mark.parametrize("name", OMTL)
def test_an_overflowing_gram_matrix_goes_through_the_numpy_update(name: str):
    X = np.array([[1.0, 2.0], [1e200, -1e200], [1.0, 1.0], [3.0, -1.0]])
    y = np.array([1.0, -1.0, 1.0, -1.0])
    tasks = np.array([0, 1, 0, 1])
    runs = []
    for path in ("kernel", "reference"):
        learner = learners.make(name, n_features=2, n_tasks=2, epoch_rounds=1)
        calls = counting_numpy_updates(learner)
        with np.errstate(all="ignore"):
            if path == "kernel":
                scores = learner.score_and_learn_many(X, y, tasks)
            else:
                prepared = learner._prepare_batch(X, y, tasks)
                scores = learner._score_and_learn_batch_reference(*prepared)
        runs.append((scores, learner.A_, learner.n_a_updates_, len(calls)))
    (got, got_A, got_n, got_calls), (want, want_A, want_n, _) = runs
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_A, want_A)
    assert np.isnan(got_A).all()
    assert got_n == want_n == got_calls == 1


@settings(max_examples=40, deadline=None)
@given(
    K=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from([ak.KIND_VONNEUMANN, ak.KIND_BATCHOPT]),
    as_inverse=st.sampled_from([0.0, 1.0]),
)
def test_held_matrices_read_and_settle_to_the_assembled_bits(
    K: int, seed: int, kind: int, as_inverse: float
) -> None:
    """Each column read from the held eigenpairs, and both matrices when settled, are
    exactly what :func:`learners.omtl.a_kernels.a_update` assembles at once."""
    s = random_state(K, seed % 1000)
    h = hp(as_inverse=as_inverse)
    _, (want_A, want_Ainv, want_L) = run_compiled(kind, h, s)
    mats, vecs, ework, rows, pending = ak.workspace(K)
    A, Ainv, L = s["A"].copy(), s["Ainv"].copy(), s["L"].copy()
    assert ak.a_update_into(
        kind, h, A, Ainv, L, s["G"], s["colsum"], mats, vecs, ework, rows, pending
    )
    assert pending[0] == 1
    np.testing.assert_array_equal(A, s["A"])  # held: the arrays are not written yet
    assert pending[5] == (kind == ak.KIND_VONNEUMANN)  # and log A with them
    np.testing.assert_array_equal(L, s["L"])
    column = np.empty(K)
    for t in range(K):
        ak.ainv_column(pending, mats, vecs, Ainv, t, -2.0, column)
        np.testing.assert_array_equal(column, -2.0 * want_Ainv[:, t])
    ak.settle(pending, mats, vecs, A, Ainv, L)
    assert pending[0] == 0 and pending[5] == 0
    np.testing.assert_array_equal(A, want_A)
    np.testing.assert_array_equal(Ainv, want_Ainv)
    np.testing.assert_array_equal(L, want_L)


@pytest.mark.parametrize("bad", [np.inf, np.nan, 1e300])
def test_a_failed_update_keeps_the_held_matrices_of_the_one_before(bad: float) -> None:
    """A von Neumann update whose matrix is not finite changes nothing: ``log A`` is
    assembled from the update before (the reference the caller runs next reads it), the
    eigenpairs it was held in are kept, and the matrices held from that update are still
    the ones a settle writes. The warm start sees the matrix in the basis: with finite
    entries of 1e300, ``eta G`` is finite and that is not."""
    s = random_state(4, 7)
    h = hp(eta_trace=0.0, eta=1e10)
    _, (want_A, want_Ainv, want_L) = run_compiled(ak.KIND_VONNEUMANN, h, s)
    mats, vecs, ework, rows, pending = ak.workspace(4)
    A, Ainv, L = s["A"].copy(), s["Ainv"].copy(), s["L"].copy()
    args = (mats, vecs, ework, rows, pending)
    assert ak.a_update_into(ak.KIND_VONNEUMANN, h, A, Ainv, L, s["G"], s["colsum"], *args)
    assert pending[3] == 1 and pending[5] == 1  # the next update starts warm
    Z, log_a = mats[1].copy(), vecs[4].copy()
    G_bad = s["G"].copy()
    G_bad[0, 1] = G_bad[1, 0] = bad
    assert not ak.a_update_into(ak.KIND_VONNEUMANN, h, A, Ainv, L, G_bad, s["colsum"], *args)
    assert pending[5] == 0
    np.testing.assert_array_equal(L, want_L)
    np.testing.assert_array_equal(mats[1], Z)
    np.testing.assert_array_equal(vecs[4], log_a)
    ak.settle(pending, mats, vecs, A, Ainv, L)
    np.testing.assert_array_equal(A, want_A)
    np.testing.assert_array_equal(Ainv, want_Ainv)


def test_an_update_that_reads_the_matrices_settles_them_first() -> None:
    """The log-det update reads ``A^{-1}``: after a held batch-optimal update it starts from
    the assembled matrix, as if the batch-optimal update had written it."""
    s = random_state(5, 8)
    h = hp()
    _, (A1, Ainv1, L1) = run_compiled(ak.KIND_BATCHOPT, h, s)
    want = run_compiled(ak.KIND_LOGDET, h, {**s, "A": A1, "Ainv": Ainv1, "L": L1})[1]
    mats, vecs, ework, rows, pending = ak.workspace(5)
    A, Ainv, L = s["A"].copy(), s["Ainv"].copy(), s["L"].copy()
    args = (mats, vecs, ework, rows, pending)
    assert ak.a_update_into(ak.KIND_BATCHOPT, h, A, Ainv, L, s["G"], s["colsum"], *args)
    assert ak.a_update_into(ak.KIND_LOGDET, h, A, Ainv, L, s["G"], s["colsum"], *args)
    assert pending[0] == 0
    np.testing.assert_array_equal(A, want[0])
    np.testing.assert_array_equal(Ainv, want[1])


def test_a_warm_start_that_does_not_converge_decomposes_log_a_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When the warm start gives up (it leaves the basis half rotated), the update
    assembles ``log A`` from the eigenpairs it was held in (the basis as it was before
    the warm start) and decomposes ``log A - eta G`` from scratch: what an update without
    eigenpairs to start from does with that ``log A``. The update runs as Python (its ``py_func``) so that the warm
    start can be replaced by one that fails."""
    s = random_state(5, 9)
    h = hp()
    mats, vecs, ework, rows, pending = ak.workspace(5)
    A, Ainv, L = s["A"].copy(), s["Ainv"].copy(), s["L"].copy()
    args = (mats, vecs, ework, rows, pending)
    _, (A1, Ainv1, L1) = run_compiled(ak.KIND_VONNEUMANN, h, s)
    G2 = s["G"] + np.outer(np.arange(5.0), np.arange(5.0))
    _, (want_A, want_Ainv, want_L) = run_compiled(
        ak.KIND_VONNEUMANN, h, {**s, "G": G2, "A": A1, "Ainv": Ainv1, "L": L1}
    )  # from scratch (no eigenpairs given), from log A assembled
    assert ak.a_update_into(ak.KIND_VONNEUMANN, h, A, Ainv, L, s["G"], s["colsum"], *args)
    assert pending[5] == 1  # log A held in the eigenpairs, the array not written

    def gives_up(d, G, step, Z, lam, work, rows, orthonormalise):  # type: ignore[no-untyped-def]
        Z[:, :] = Z[::-1]  # rotated half way, as a warm start that stopped leaves it
        return 0

    monkeypatch.setattr(ak, "warm_eig_step", gives_up)
    assert ak._vonneumann.py_func(h, A, Ainv, L, G2, *args)
    assert pending[4] == 0  # decomposed from scratch
    ak.settle(pending, mats, vecs, A, Ainv, L)
    np.testing.assert_array_equal(L, want_L)
    np.testing.assert_array_equal(A, want_A)
    np.testing.assert_array_equal(Ainv, want_Ainv)


def test_a_warm_start_that_gives_up_on_a_matrix_that_is_not_finite_keeps_no_basis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The warm start gave up (leaving the basis turned), and the assembled matrix is not
    finite: the update returns False with ``log A`` assembled from the eigenpairs it was
    held in, and keeps no basis (the turned one no longer holds ``log A``), so the learner
    stores "none kept" (:func:`learners.omtl.a_kernels.store_basis`)."""
    s = random_state(4, 10)
    h = hp()
    _, (_, _, want_L) = run_compiled(ak.KIND_VONNEUMANN, h, s)
    mats, vecs, ework, rows, pending = ak.workspace(4)
    A, Ainv, L = s["A"].copy(), s["Ainv"].copy(), s["L"].copy()
    args = (mats, vecs, ework, rows, pending)
    assert ak.a_update_into(ak.KIND_VONNEUMANN, h, A, Ainv, L, s["G"], s["colsum"], *args)

    def gives_up(d, G, step, Z, lam, work, rows, orthonormalise):  # type: ignore[no-untyped-def]
        Z[:, :] = Z[::-1]
        return 0

    monkeypatch.setattr(ak, "warm_eig_step", gives_up)
    G_bad = s["G"].copy()
    G_bad[0, 1] = G_bad[1, 0] = np.nan
    assert not ak._vonneumann.py_func(h, A, Ainv, L, G_bad, *args)
    np.testing.assert_array_equal(L, want_L)
    assert pending[3] == 0
    basis, age = np.zeros((5, 4)), np.array([7])
    ak.store_basis(pending, mats, vecs, basis, age)
    assert age[0] == -1
