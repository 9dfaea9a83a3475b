"""The warm-started eigendecomposition of the von Neumann update (learners.omtl.jacobi).

Hand-computed: a 2 x 2 matrix from the identity basis takes one rotation of 45
degrees. Properties (hypothesis): from the eigenvectors of a nearby matrix, or from
any orthonormal basis, the result decomposes the matrix to rounding with
ascending eigenvalues equal to LAPACK's and an orthonormal basis; the correction
takes a basis that is off orthonormal to one that is not; a decoupled task stays
exactly decoupled; the same for a step from held eigenpairs (``Z^T diag(d) Z - eta G``
decomposed without assembling it). Learner level: the von Neumann learner keeps the
eigenpairs of ``log A`` as state, uses them, and gives the same bits however a stream
is cut into calls, restored or not; a snapshot without them is read as "none kept".
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.omtl import jacobi
from learners.omtl.numerics import sym


def warm(
    M: np.ndarray, Z: np.ndarray, orthonormalise: bool = True
) -> tuple[bool, np.ndarray, np.ndarray]:
    """``(converged, lam, Z)``: the eigenpairs of the symmetric ``M`` from the basis ``Z``
    (:func:`~learners.omtl.jacobi.warm_eig_step` with ``d = 0``, ``step = -1``)."""
    code, lam, Z = step(np.zeros(M.shape[0]), M, -1.0, Z, orthonormalise)
    assert code != -1
    return code == 1, lam, Z


def step(
    d: np.ndarray, G: np.ndarray, eta: float, Z: np.ndarray, orthonormalise: bool = True
) -> tuple[int, np.ndarray, np.ndarray]:
    """``(code, lam, Z)`` of :func:`~learners.omtl.jacobi.warm_eig_step`: the eigenpairs of
    ``Z^T diag(d) Z - eta sym(G)`` from the basis ``Z``."""
    K = G.shape[0]
    Z = np.ascontiguousarray(Z, dtype=float).copy()
    lam = np.empty(K)
    work, rows = np.empty(2 * K * K + 4 * K), np.empty(K, dtype=np.int64)
    code = jacobi.warm_eig_step(
        np.ascontiguousarray(d, dtype=float), np.ascontiguousarray(G), eta, Z, lam, work, rows,
        orthonormalise,
    )  # fmt: skip
    return int(code), lam, Z


def nearly_symmetric(K: int, rng: np.random.Generator) -> np.ndarray:
    """A matrix symmetric to rounding, as the tracked Gram matrix is (its two triangles
    are summed in different orders)."""
    X = rng.standard_normal((K, 3 * K))
    G = X @ X.T
    return G * (1.0 + 2.0**-52 * rng.choice([-1.0, 0.0, 1.0], size=(K, K)))


def random_symmetric(K: int, rng: np.random.Generator) -> np.ndarray:
    return sym(rng.standard_normal((K, K)) * rng.uniform(0.1, 10.0))


def assert_decomposes(M: np.ndarray, lam: np.ndarray, Z: np.ndarray) -> None:
    K = M.shape[0]
    scale = float(np.abs(M).max())
    assert np.all(np.diff(lam) >= 0.0)
    np.testing.assert_allclose(Z @ Z.T, np.eye(K), rtol=0, atol=1e-14 * K)
    np.testing.assert_allclose(Z.T @ (lam[:, None] * Z), M, rtol=0, atol=1e-14 * K * scale)
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(M), rtol=0, atol=1e-14 * K * scale)


def decoupled_basis(K: int, j: int, rng: np.random.Generator) -> np.ndarray:
    """An orthonormal basis with the row ``e_j`` and zeros in column j of the other rows."""
    others = [k for k in range(K) if k != j]
    basis = np.zeros((K, K))
    basis[j, j] = 1.0
    Q = np.linalg.qr(rng.standard_normal((K - 1, K - 1)))[0]
    for r, row in enumerate(Q.T):
        basis[others[r], others] = row
    return basis


def assert_decoupled(Z: np.ndarray, j: int) -> int:
    """Exactly one row of ``Z`` has a component on task j, and it is ``e_j``; returns it."""
    unit = [r for r in range(Z.shape[0]) if Z[r, j] != 0.0]
    assert len(unit) == 1 and Z[unit[0], j] == 1.0
    assert np.count_nonzero(Z[unit[0]]) == 1
    return unit[0]


def test_a_two_by_two_matrix_takes_one_rotation_of_45_degrees() -> None:
    """``[[2, 1], [1, 2]]`` from the identity: ``theta = (2 - 2) / 2 = 0``, so ``t = 1``,
    ``c = s = 1/sqrt(2)``; the diagonal becomes ``2 - t = 1`` and ``2 + t = 3``."""
    ok, lam, Z = warm(np.array([[2.0, 1.0], [1.0, 2.0]]), np.eye(2))
    assert ok
    np.testing.assert_array_equal(lam, [1.0, 3.0])
    h = 1.0 / math.sqrt(2.0)
    np.testing.assert_allclose(Z, [[h, -h], [h, h]], rtol=0, atol=2e-16)  # a unit of rounding


@settings(max_examples=60, deadline=None)
@given(K=st.integers(1, 16), seed=st.integers(0, 2**32 - 1), step=st.floats(1e-12, 1e-1))
def test_from_the_eigenvectors_of_a_nearby_matrix(K: int, seed: int, step: float) -> None:
    rng = np.random.default_rng(seed)
    before = random_symmetric(K, rng)
    M = sym(before + step * np.abs(before).max() * random_symmetric(K, rng))
    _, Q = np.linalg.eigh(before)
    ok, lam, Z = warm(M, Q.T)
    assert ok
    assert_decomposes(M, lam, Z)


@settings(max_examples=40, deadline=None)
@given(K=st.integers(1, 10), seed=st.integers(0, 2**32 - 1))
def test_from_any_orthonormal_basis(K: int, seed: int) -> None:
    """Far from a warm start the method needs more sweeps, but it converges all the same."""
    rng = np.random.default_rng(seed)
    M = random_symmetric(K, rng)
    Q = np.linalg.qr(rng.standard_normal((K, K)))[0]
    ok, lam, Z = warm(M, Q)
    assert ok
    assert_decomposes(M, lam, Z)


@settings(max_examples=30, deadline=None)
@given(K=st.integers(2, 12), seed=st.integers(0, 2**32 - 1))
def test_the_correction_makes_a_basis_orthonormal_again(K: int, seed: int) -> None:
    """A basis 1e-9 off orthonormal (far more than rounding leaves: each row leans 1e-9
    towards the one before): renormalising rows keeps the angles' error; the
    correction takes it to rounding."""
    rng = np.random.default_rng(seed)
    M = random_symmetric(K, rng)
    _, Q = np.linalg.eigh(M)
    off = Q.T.copy()
    off[1:] += 1e-9 * Q.T[:-1]
    _, _, kept = warm(M, off, orthonormalise=False)
    assert np.abs(kept @ kept.T - np.eye(K)).max() > 1e-11
    ok, _, Z = warm(M, off, orthonormalise=True)
    assert ok
    assert np.abs(Z @ Z.T - np.eye(K)).max() <= 1e-14 * K


@settings(max_examples=30, deadline=None)
@given(K=st.integers(2, 10), seed=st.integers(0, 2**32 - 1), j=st.integers(0, 9))
def test_a_decoupled_task_stays_exactly_decoupled(K: int, seed: int, j: int) -> None:
    """Task j's row of M is zero off the diagonal and the basis holds ``e_j``: its
    eigenvector is ``e_j`` exactly, and no other eigenvector has a component on it."""
    j %= K
    rng = np.random.default_rng(seed)
    M = random_symmetric(K, rng)
    M[j, :] = 0.0
    M[:, j] = 0.0
    M[j, j] = rng.standard_normal()
    basis = decoupled_basis(K, j, rng)
    ok, lam, Z = warm(M, basis)
    assert ok
    assert_decoupled(Z, j)
    assert_decomposes(M, lam, Z)


@settings(max_examples=60, deadline=None)
@given(K=st.integers(1, 16), seed=st.integers(0, 2**32 - 1), eta=st.floats(1e-12, 1e-1))
def test_a_step_from_held_eigenpairs(K: int, seed: int, eta: float) -> None:
    """``Z^T diag(d) Z - eta sym(G)`` from the eigenpairs ``(Z, d)`` of its first term (the
    von Neumann update's ``log A - eta G``): the same decomposition as of the assembled
    matrix, without assembling it."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((K, K)))[0]
    d = np.sort(rng.standard_normal(K) * rng.uniform(0.1, 10.0))
    G = nearly_symmetric(K, rng)
    code, lam, Z = step(d, G, eta / np.trace(G), Q.T)
    assert code == 1
    assert_decomposes(sym(Q @ np.diag(d) @ Q.T - eta / np.trace(G) * G), lam, Z)


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_a_step_to_a_matrix_that_is_not_finite_leaves_the_basis(bad: float) -> None:
    rng = np.random.default_rng(0)
    Q = np.linalg.qr(rng.standard_normal((4, 4)))[0]
    G = nearly_symmetric(4, rng)
    G[1, 2] = G[2, 1] = bad
    code, _, Z = step(np.arange(4.0), G, 0.1, Q.T)
    assert code == -1
    np.testing.assert_array_equal(Z, Q.T)


@settings(max_examples=30, deadline=None)
@given(K=st.integers(2, 10), seed=st.integers(0, 2**32 - 1), j=st.integers(0, 9))
def test_a_step_keeps_a_decoupled_task_exactly_decoupled(K: int, seed: int, j: int) -> None:
    """Task j has no weights (its row and column of G are zero) and the basis holds
    ``e_j``: the step leaves ``e_j`` an eigenvector exactly."""
    j %= K
    rng = np.random.default_rng(seed)
    G = nearly_symmetric(K, rng)
    G[j, :] = 0.0
    G[:, j] = 0.0
    basis = decoupled_basis(K, j, rng)
    d = rng.standard_normal(K)
    code, lam, Z = step(d, G, 0.05 / np.trace(G), basis)
    assert code == 1
    assert lam[assert_decoupled(Z, j)] == d[j]
    assert_decomposes(sym(basis.T @ np.diag(d) @ basis - 0.05 / np.trace(G) * G), lam, Z)


# ------------------------------------------------------------- the learner
def related_stream(n: int, K: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    W = rng.standard_normal(d) + 0.5 * rng.standard_normal((K, d))
    X = rng.standard_normal((n, d))
    tasks = rng.integers(0, K, size=n)
    y = np.where(np.einsum("ij,ij->i", X, W[tasks]) >= 0.0, 1.0, -1.0)
    y[rng.random(n) < 0.1] *= -1.0
    return X, y, tasks


def von_neumann(**params: Any) -> Any:
    return learners.make("omtl-vonneumann", n_features=8, n_tasks=5, epoch_rounds=30, **params)


def assert_same_state(a: Any, b: Any) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert set(sa) == set(sb)
    for key, value in sa.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(sb[key], value, err_msg=key)
        else:
            assert sb[key] == value, key


def test_the_learner_keeps_and_uses_its_eigenvectors() -> None:
    X, y, tasks = related_stream(1500, 5, 8, seed=1)
    learner = von_neumann()
    assert learner.eigvecs_age_ == -1
    learner.score_and_learn_many(X, y, tasks)
    assert learner.n_a_updates_ > 200
    # one decomposition from scratch, the first; every later one warm
    assert learner.eigvecs_age_ == learner.n_a_updates_ - 1
    Z = learner.eigvecs_
    np.testing.assert_allclose(Z @ Z.T, np.eye(5), rtol=0, atol=1e-14)
    L = learner.logA_
    inner = Z @ L @ Z.T  # log A is diagonal in the basis, to rounding
    np.testing.assert_allclose(inner - np.diag(np.diag(inner)), 0.0, rtol=0, atol=1e-13)
    # ... with the kept eigenvalues on the diagonal: logA_ is their assembly
    np.testing.assert_allclose(np.diag(inner), learner.log_eigvals_, rtol=0, atol=1e-13)
    np.testing.assert_allclose(Z.T @ np.diag(learner.log_eigvals_) @ Z, L, rtol=0, atol=1e-13)


def test_a_stream_cut_anywhere_or_restored_gives_the_same_bits() -> None:
    X, y, tasks = related_stream(900, 5, 8, seed=2)
    whole = von_neumann()
    want = whole.score_and_learn_many(X, y, tasks)
    pieces = von_neumann()
    got = [pieces.score_and_learn_many(X[:1], y[:1], tasks[:1])]
    cuts = [1, 7, 150, 151, 400, 650, 900]
    for a, b in itertools.pairwise(cuts):
        if a == 400:  # a restore between calls: the basis travels with the state
            pieces = type(pieces).from_state_dict(pieces.state_dict())
        got.append(pieces.score_and_learn_many(X[a:b], y[a:b], tasks[a:b]))
    np.testing.assert_array_equal(np.concatenate(got), want)
    assert_same_state(whole, pieces)
    singles = von_neumann()
    one_by_one = [singles.score_and_learn_one(X[i], float(y[i]), int(tasks[i])) for i in range(900)]
    np.testing.assert_array_equal(one_by_one, want)
    assert_same_state(whole, singles)


@pytest.mark.parametrize("dropped", [("eigenpairs_", "eigvecs_age_"), ("eigenpairs_",)])
def test_a_snapshot_without_eigenpairs_starts_from_scratch(dropped: tuple[str, ...]) -> None:
    """A state written before the learner kept its eigenvectors, or before it kept their
    eigenvalues beside them, restores as "none kept": the next update decomposes from
    scratch, and the learner goes on warm from there."""
    X, y, tasks = related_stream(1200, 5, 8, seed=3)
    learner = von_neumann()
    learner.score_and_learn_many(X[:600], y[:600], tasks[:600])
    state = {
        k: v for k, v in learner.state_dict().items() if k.removeprefix("state.") not in dropped
    }
    restored = type(learner).from_state_dict(state)
    assert restored.eigvecs_age_ == -1
    np.testing.assert_array_equal(restored.logA_, learner.logA_)
    before = restored.n_a_updates_
    restored.score_and_learn_many(X[600:], y[600:], tasks[600:])
    assert restored.eigvecs_age_ == restored.n_a_updates_ - before - 1 > 50


def test_an_update_of_the_numpy_path_leaves_no_eigenvectors() -> None:
    learner = von_neumann()
    X, y, tasks = related_stream(200, 5, 8, seed=4)
    learner.score_and_learn_many(X, y, tasks)
    assert learner.eigvecs_age_ >= 0
    learner._updated_interaction()
    assert learner.eigvecs_age_ == -1


def test_a_new_task_extends_the_basis_with_its_own_eigenvector() -> None:
    X, y, tasks = related_stream(600, 5, 8, seed=5)
    learner = von_neumann()
    learner.score_and_learn_many(X, y, tasks)
    age, Z = learner.eigvecs_age_, learner.eigvecs_.copy()
    log_eigvals = learner.log_eigvals_.copy()
    learner.add_task()
    assert learner.eigvecs_age_ == age
    np.testing.assert_array_equal(learner.log_eigvals_[:5], log_eigvals)
    assert learner.log_eigvals_[5] == learner.logA_[5, 5] == np.log(learner.A_[5, 5])
    np.testing.assert_array_equal(learner.eigvecs_[:5, :5], Z)
    np.testing.assert_array_equal(learner.eigvecs_[5], np.eye(6)[5])
    np.testing.assert_array_equal(learner.eigvecs_[:5, 5], 0.0)
    tasks6 = np.where(tasks == 0, 5, tasks)
    learner.score_and_learn_many(X, y, tasks6)
    assert learner.eigvecs_age_ > age
