"""The ELLA-family learners: batches, refresh schedule, accumulators, unseen tasks, relations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.base import Learner
from learners.checks.common import assert_states_equal
from learners.ella.accumulators import eq7_objective
from learners.ella.base_learners import fit_linear
from learners.ella.gsvd import atom_weights
from learners.ella.lasso import sparse_code
from learners.ella.model import BasisLearner
from learners.ella.variants import EllaDual, EllaIncremental

VARIANTS = ("ella", "ella-svd", "ella-incremental", "ella-dual", "mtl-svd")
WITH_ACCUMULATORS = ("ella", "ella-incremental", "ella-dual")


def _make(name: str, **params: object) -> BasisLearner:
    model = learners.make(name, n_features=4, n_tasks=5, seed=3, **params)
    assert isinstance(model, BasisLearner)
    return model


def _task_batches(seed: int, n_tasks: int = 5, n: int = 25) -> list[tuple[np.ndarray, np.ndarray]]:
    """Regression tasks sharing two latent components (theta_t = L* s_t)."""
    rng = np.random.default_rng(seed)
    basis = rng.normal(size=(4, 2))
    out = []
    for _ in range(n_tasks):
        X = rng.normal(size=(n, 4))
        out.append((X, X @ (basis @ rng.normal(size=2)) + 0.1 * rng.normal(size=n)))
    return out


def test_learn_many_is_one_ella_step_per_batch_against_a_dense_reference() -> None:
    """Slow reference: STL by the normal equations, Lasso code, then vec(L) from explicit
    kron sums: (1/T sum (s s^T) kron D + lam I)^{-1} (1/T sum s kron D theta)."""
    model = _make("ella", k=3, lam=0.1, ridge=0.05, mu=0.01)
    L = model.basis()
    seen: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for t, (X, y) in enumerate(_task_batches(0)):
        model.learn_many(X, y, t)
        Xb = np.hstack([X, np.ones((X.shape[0], 1))])
        n, d = Xb.shape
        D = Xb.T @ Xb / n + 0.05 * np.eye(d)
        theta = np.linalg.solve(D, Xb.T @ y / n)
        s = sparse_code(L, D, theta, 0.01)
        seen[t] = (s, D, theta)
        T = len(seen)
        A = sum(np.kron(np.outer(s_, s_), D_) for s_, D_, _ in seen.values()) / T
        b = sum(np.kron(s_, D_ @ th_) for s_, D_, th_ in seen.values()) / T
        L = np.linalg.solve(A + 0.1 * np.eye(d * 3), b).reshape(3, d).T
        np.testing.assert_allclose(model.basis(), L, atol=1e-9)
        np.testing.assert_allclose(model.codes()[t], s, atol=1e-9)
    assert np.array_equal(model.pending_, np.zeros(5, dtype=np.int64))


@pytest.mark.parametrize("name", WITH_ACCUMULATORS)
def test_accumulators_equal_a_recomputation_from_scratch(name: str) -> None:
    """After batches, revisits and streamed rows, A = sum (s s^T) kron D and b = sum s kron D theta
    over the tasks that shaped the basis, with their current codes."""
    model = _make(name, k=3, refresh_every=4)
    batches = _task_batches(1)
    for t, (X, y) in enumerate(batches):
        model.learn_many(X[:15], y[:15], t)
    model.learn_many(batches[2][0][15:], batches[2][1][15:], 2)
    for i in range(10):
        model.learn_one(batches[0][0][15 + i], float(batches[0][1][15 + i]), 0)
    used = np.flatnonzero(model.used_)
    A = sum(np.kron(np.outer(model.S_[t], model.S_[t]), model.D_[t]) for t in used)
    b = sum(np.kron(model.S_[t], model.D_[t] @ model.theta_[t]) for t in used)
    np.testing.assert_allclose(model.A_, A, atol=1e-9)
    np.testing.assert_allclose(model.b_, b, atol=1e-9)


def test_refresh_schedule_of_learn_one() -> None:
    """refresh_every = 3: nothing is coded until the task's third example, then pending resets."""
    model = _make("ella", refresh_every=3)
    X, y = _task_batches(2)[0]
    for i in range(2):
        model.learn_one(X[i], float(y[i]), 1)
    assert not model.codes().any() and model.pending_[1] == 2
    model.learn_one(X[2], float(y[2]), 1)
    assert model.codes()[1].any() and model.pending_[1] == 0 and model.count_[1] == 3
    model.learn_one(X[3], float(y[3]), 1)
    with pytest.raises(ValueError):
        model.refresh(5)
    model.refresh()
    assert model.pending_[1] == 0
    theta, _ = fit_linear(model.xtx_[1], model.xty_[1], 4, model.hyper["ridge"])
    np.testing.assert_allclose(model.theta_[1], theta)


def test_streamed_statistics_equal_the_batch_statistics() -> None:
    """Sufficient statistics: learn_one row by row accumulates X^T X and X^T y of the batch."""
    a, b = _make("ella", refresh_every=1000), _make("ella", refresh_every=1000)
    X, y = _task_batches(3)[0]
    for row, label in zip(X, y.tolist(), strict=True):
        a.learn_one(row, label, 0)
    b.learn_many(X, y, 0)
    np.testing.assert_allclose(a.xtx_[0], b.xtx_[0], atol=1e-10)
    np.testing.assert_allclose(a.xty_[0], b.xty_[0], atol=1e-10)
    a.refresh(0)
    np.testing.assert_allclose(a.codes() @ a.basis().T, b.codes() @ b.basis().T, atol=1e-9)


@pytest.mark.parametrize("name", VARIANTS)
def test_encode_fits_an_unseen_task_without_changing_anything(name: str) -> None:
    model = _make(name, k=2)
    batches = _task_batches(4)
    for t in range(3):
        model.learn_many(*batches[t], t)
    before = model.state_dict()
    s, w = model.encode(*batches[4])
    assert_states_equal(before, model.state_dict(), "after encode")
    theta, D = model.single_task_fit(*batches[4])
    np.testing.assert_allclose(s, sparse_code(model.basis(), D, theta, model.hyper["mu"]))
    np.testing.assert_allclose(w, model.basis() @ s)


def test_relation_matrix_is_the_cosine_of_the_codes() -> None:
    model = _make("ella", k=3)
    batches = _task_batches(5)
    for t in range(4):
        model.learn_many(*batches[t], t)
    S = model.codes()
    R = model.relation_matrix()
    assert R is not None
    for u in range(4):
        for v in range(4):
            expected = S[u] @ S[v] / (np.linalg.norm(S[u]) * np.linalg.norm(S[v]))
            assert R[u, v] == pytest.approx(1.0 if u == v else expected, abs=1e-12)
    assert R[4, 4] == 1.0 and R[4, :4].tolist() == [0.0] * 4  # task 4 has no code yet


def test_ella_svd_atoms_are_unit_in_the_consensus_metric() -> None:
    """After the GSVD step (Eq. 8) an updated atom satisfies l^T M l = 1 over its tasks."""
    model = _make("ella-svd", k=3)
    batches = _task_batches(6)
    for t, batch in enumerate(batches):
        model.learn_many(*batch, t)
    last = batches and len(batches) - 1
    for j in np.flatnonzero(model.codes()[last]).tolist():
        users = np.flatnonzero(model.used_ & (model.S_[:, j] != 0))
        M, _ = atom_weights(model.D_[users])
        atom = model.basis()[:, j]
        assert atom @ M @ atom == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("keep_rule", ["l1", "l0"])
def test_dual_update_counts_every_svd_step_and_never_keeps_a_worse_one(keep_rule: str) -> None:
    """Probe between the two halves of each Dual Update: the state after the (possibly undone)
    SVD step never has a larger Eq. (7) (with the keep rule's penalty) than before it, and
    equals the SVD result when kept."""
    records: list[tuple[float, float, float]] = []

    class Probe(EllaDual):
        def _svd_step(self, task: int) -> None:
            before = self.objective(keep_rule)
            super()._svd_step(task)
            self.probe_ = (before, self.objective(keep_rule))

        def _incremental_step(self, task: int) -> None:
            records.append((*self.probe_, self.objective(keep_rule)))
            super()._incremental_step(task)

    model = Probe(n_features=4, n_tasks=5, seed=3, k=3, keep_rule=keep_rule)
    for t, batch in enumerate(_task_batches(7)):
        model.learn_many(*batch, t)
    assert model.svd_kept_ + model.svd_undone_ == 5 == len(records)
    for before, after_svd, kept in records:
        assert kept <= before
        assert kept == (after_svd if after_svd <= before else before)


def test_logistic_decision_is_the_logit_of_the_coded_model() -> None:
    rng = np.random.default_rng(8)
    model = _make("ella-incremental", base_learner="logistic", k=2)
    assert model.label_kind == "classification"
    X = rng.normal(size=(40, 4))
    y = np.where(X[:, 0] - X[:, 1] > 0, 1.0, -1.0)
    model.learn_many(X, y, 2)
    w = model.task_weights()
    assert w is not None
    x = np.array([1.0, -1.0, 0.0, 0.5])
    assert model.decision_one(x, 2) == pytest.approx(np.append(x, 1.0) @ w[2])
    assert model.predict_one(x, 2) == 1
    with pytest.raises(ValueError):
        model.learn_one(x, 0.5, 2)


def test_regression_variant_accepts_real_targets_and_predicts_them() -> None:
    model = _make("ella", k=2)
    X, y = _task_batches(9)[0]
    model.learn_many(X, y, 0)
    assert model.label_kind == "regression"
    assert isinstance(model.predict_one(X[0], 0), float)
    rmse = np.sqrt(np.mean([(model.predict_one(x, 0) - t) ** 2 for x, t in zip(X, y, strict=True)]))
    assert rmse < 0.5 * np.std(y)


def test_add_task_at_any_time_then_learn_it() -> None:
    model = _make("ella-dual", k=2)
    batches = _task_batches(10, n_tasks=6)
    for t in range(5):
        model.learn_many(*batches[t], t)
    assert model.add_task() == 5
    assert model.decision_one(batches[5][0][0], 5) == 0.0
    model.learn_many(*batches[5], 5)
    assert model.codes().shape == (6, 2) and model.codes()[5].any()


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 1000), name=st.sampled_from(VARIANTS))
def test_codes_stay_sparse_solutions_and_predictions_finite(seed: int, name: str) -> None:
    """Invariant: after any sequence of batches every task weight row is L s_t and finite."""
    model = _make(name, k=3)
    rng = np.random.default_rng(seed)
    batches = _task_batches(seed)
    for t in rng.integers(0, 5, size=6).tolist():
        X, y = batches[int(t)]
        model.learn_many(X, y, int(t))
    W = model.task_weights()
    assert W is not None and np.isfinite(W).all()
    np.testing.assert_allclose(W, model.codes() @ model.basis().T)


def test_init_first_k_copies_the_first_task_models_into_the_basis() -> None:
    """init_first_k: task number T (T < k) gets column T = theta_T and code e_T, so before
    the basis step its model is its own single-task fit; later tasks are coded by the Lasso."""

    class Probe(EllaIncremental):
        def _update_basis(self, task: int) -> None:
            seen.append((self.L_.copy(), self.S_[task].copy(), self.theta_[task].copy()))
            super()._update_basis(task)

    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    model = Probe(n_features=4, n_tasks=5, seed=3, k=2, init_first_k=True)
    batches = _task_batches(11)
    for t in (3, 1, 0):
        model.learn_many(*batches[t], t)
    for T, (L, s, theta) in enumerate(seen[:2]):
        np.testing.assert_array_equal(s, np.eye(2)[T])
        np.testing.assert_array_equal(L[:, T], theta)
    L, s, theta = seen[2]
    np.testing.assert_allclose(s, sparse_code(L, model.D_[0], theta, model.hyper["mu"]))


def test_icml_ridge_form_fits_tasks_as_the_matlab_code_does() -> None:
    """ridge_form='icml': theta_t = (X^T X + ridge I')^{-1} X^T y and D_t = (X^T X + ridge I') / n
    with the appended bias unpenalised (slow dense reference); the default form is unchanged."""
    model = _make("ella", k=3, ridge=0.5, ridge_form="icml")
    aaai = _make("ella", k=3, ridge=0.5)
    X, y = _task_batches(5)[0]
    model.learn_many(X, y, 2)
    aaai.learn_many(X, y, 2)
    Xb = np.hstack([X, np.ones((X.shape[0], 1))])
    penalised = Xb.T @ Xb + 0.5 * np.diag([1.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_allclose(model.theta_[2], np.linalg.solve(penalised, Xb.T @ y), atol=1e-10)
    np.testing.assert_allclose(model.D_[2], penalised / X.shape[0], atol=1e-12)
    np.testing.assert_allclose(aaai.D_[2], Xb.T @ Xb / X.shape[0] + 0.5 * np.eye(5), atol=1e-12)
    s, w = model.encode(X, y)
    np.testing.assert_allclose(w, model.basis() @ s)


def test_last_is_bias_leaves_the_data_bias_free_instead_of_appending_a_second_one() -> None:
    """synthetic-ella and school carry their bias column: with append_bias off and last_is_bias
    on, the ICML form sees d = n_features (no duplicate constant column) and leaves that last
    coordinate unpenalised, exactly as append_bias does on the same data without the column."""
    X, y = _task_batches(6)[0]
    Xb = np.hstack([X, np.ones((X.shape[0], 1))])

    def data_bias(last_is_bias: bool) -> Learner:
        """ICML-form ella on data that carries its own bias column (none appended)."""
        return learners.make(
            "ella",
            n_features=5,
            n_tasks=5,
            seed=3,
            k=3,
            ridge=0.5,
            ridge_form="icml",
            append_bias=False,
            last_is_bias=last_is_bias,
        )

    own = data_bias(last_is_bias=True)
    appended = _make("ella", k=3, ridge=0.5, ridge_form="icml")
    assert isinstance(own, BasisLearner)
    assert own.dim == appended.dim == 5
    own.learn_many(Xb, y, 1)
    appended.learn_many(X, y, 1)
    penalised = Xb.T @ Xb + 0.5 * np.diag([1.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_allclose(own.theta_[1], np.linalg.solve(penalised, Xb.T @ y), atol=1e-10)
    np.testing.assert_allclose(own.theta_[1], appended.theta_[1], atol=1e-10)
    np.testing.assert_allclose(own.D_[1], appended.D_[1], atol=1e-12)
    ridged = data_bias(last_is_bias=False)
    assert isinstance(ridged, BasisLearner)
    ridged.learn_many(Xb, y, 1)
    np.testing.assert_allclose(ridged.D_[1], (Xb.T @ Xb + 0.5 * np.eye(5)) / X.shape[0])


@pytest.mark.parametrize("dead_column", ["randn", "unit"])
def test_a_dead_basis_column_is_redrawn_as_the_option_says(dead_column: str) -> None:
    """Step 3 of docs/algorithms.md Sec. 4.3: an all-zero column of L is redrawn before the
    code is computed. 'randn' (default, the authors' code): each dead column becomes an
    unscaled randn(d, 1), in column order; 'unit': the same direction family scaled to length
    1. Checked through learn_many: the task's code is the Lasso code over the redrawn basis."""
    params = {} if dead_column == "randn" else {"dead_column": dead_column}
    model = _make("ella", k=3, lam=0.1, ridge=0.05, mu=0.01, **params)
    assert model.hyper["dead_column"] == dead_column
    model.L_[:, [0, 2]] = 0.0
    twin = np.random.Generator(np.random.PCG64())
    twin.bit_generator.state = model.rng.bit_generator.state
    d = model.dim
    expected = model.basis()
    if dead_column == "randn":
        expected[:, 0] = twin.standard_normal(d)
        expected[:, 2] = twin.standard_normal(d)
    else:
        cols = twin.standard_normal((d, 2))
        expected[:, [0, 2]] = cols / np.linalg.norm(cols, axis=0)
    X, y = _task_batches(1)[0]
    model.learn_many(X, y, 0)
    Xb = np.hstack([X, np.ones((X.shape[0], 1))])
    D = Xb.T @ Xb / X.shape[0] + 0.05 * np.eye(d)
    theta = np.linalg.solve(D, Xb.T @ y / X.shape[0])
    np.testing.assert_allclose(model.codes()[0], sparse_code(expected, D, theta, 0.01), atol=1e-9)
    norms = np.linalg.norm(expected[:, [0, 2]], axis=0)
    if dead_column == "randn":
        assert not np.allclose(norms, 1.0)
    else:
        np.testing.assert_allclose(norms, 1.0)


def test_eq7_penalties_l1_and_l0_by_hand() -> None:
    """Eq. (7) with one task, L = I (2 x 2), D = I, n = 2, theta = (1, 0), s = (0.5, 0):
    fit ||(0.5, 0)||^2 / 2 = 0.125; mu = 0.1: L1 adds 0.1 * 0.5, L0 adds 0.1 * 1."""
    args = (np.eye(2), np.array([[0.5, 0.0]]), np.array([[1.0, 0.0]]), np.eye(2)[None])
    n = np.array([2])
    assert eq7_objective(*args, n, 0.1) == pytest.approx(0.175, rel=1e-15)
    assert eq7_objective(*args, n, 0.1, "l0") == pytest.approx(0.225, rel=1e-15)
    assert _make("ella-dual").hyper["keep_rule"] == "l1"
