"""The compiled OMTL weight pass against the numpy reference path, over seeded random streams.

Every OMTL learner, with each of its conformance parameter sets (priming only, A
updates from an early round with both ``a_update_uses``, the fraction form, the
active variant), dense and CSR rows: the kernel path (``score_and_learn_many`` in
random blocks, ``score_and_learn_one``, ``learn_one``) and the reference
(``_decision`` + ``_learn_reference`` row by row, or the Gram-matrix batch path
``_score_and_learn_batch_reference``) give the same predictions, mistakes, A
updates and query decisions, the same generator state, and scores and states
equal to 1e-12 relative (to each array's largest entry).

The kernel sums in index order where numpy's BLAS sums in blocks, so the two
differ by rounding. Where the learner amplifies rounding (the literal
covariance and batch-optimal A, whose inverse has condition numbers up to
1/ridge; the literal eta, whose weights grow geometrically) the tolerance is
instead 100 times the reference's own deviation when only its summation order
changes (the same stream with the feature columns permuted), measured only where
a deviation passes 1e-12 (:class:`LazySpread`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.base import Learner
from learners.omtl import kernels as omtl_kernels

OMTL = ("omtl-logdet", "omtl-vonneumann", "omtl-cov", "batchopt")
RTOL = 1e-12
#: The compiled von Neumann update's warm start (learners.omtl.jacobi): eigenvectors
#: the numpy path does not keep (it decomposes from scratch with LAPACK, whose
#: eigenvectors may differ in sign and, for equal eigenvalues, in direction). What
#: they decompose is compared: ``log A``, A and its inverse.
WARM_START = ("state.eigenpairs_", "state.eigvecs_age_")


def random_stream(
    sparse: bool, n: int, K: int, d: int, seed: int, active: int | None = None
) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray, np.ndarray]:
    """Related tasks, labels with 10% noise; dense rows with ~15% zeros, or CSR rows with ~6 nnz.

    With ``active``, the first half of the stream has only tasks ``0..active-1``: the
    other rows of W stay zero while A is updated (decoupled tasks, a singular Gram matrix).
    """
    rng = np.random.default_rng(seed)
    w0 = rng.standard_normal(d)
    W = w0 + 0.7 * rng.standard_normal((K, d))
    tasks = rng.integers(0, K, size=n)
    if active is not None:
        tasks[: n // 2] = rng.integers(0, active, size=n // 2)
    X = rng.standard_normal((n, d)) * rng.uniform(0.3, 2.0, size=(n, 1))
    X[rng.random((n, d)) < (1.0 - 6.0 / d if sparse else 0.15)] = 0.0
    y = np.where(np.einsum("ij,ij->i", X, W[tasks]) >= 0.0, 1.0, -1.0)
    y[rng.random(n) < 0.1] *= -1.0
    return (sp.csr_matrix(X) if sparse else X), y, tasks


def block_sizes(learner: Learner) -> list[int]:
    """Block sizes of a feed. Active learners count a round per query, and asking a long
    block before learning any of it starts the A updates from nearly zero weights, where
    the literal covariance (ridge 1e-6) makes the reference itself flip predictions when
    only its summation order changes; short blocks keep the comparison meaningful."""
    return [1, 2, 7] if learner.is_active else [1, 2, 7, 33, 120]


Learn = Callable[[np.ndarray, bool], np.ndarray]


def feed(learner: Learner, X: Any, tasks: np.ndarray, seed: int, learn: Learn) -> Any:
    """Feed the stream in random blocks; returns ``(scores, asked)``.

    Active learners ask ``query_one`` for every row of a block first; ``learn(rows,
    single)`` then learns the asked rows and returns their scores (``single``: one row,
    to go through the per-event path on a coin flip).
    """
    rng = np.random.default_rng(seed)
    scores, asked = np.zeros(len(tasks)), np.ones(len(tasks), dtype=bool)
    i = 0
    while i < len(tasks):
        size = int(rng.choice(block_sizes(learner)))
        block = np.arange(i, min(i + size, len(tasks)))
        if learner.is_active:
            asked[block] = [learner.query_one(X[j], int(tasks[j])) for j in block]
        chosen = block[asked[block]]
        single = chosen.size == 1 and rng.random() < 0.5
        if chosen.size:
            scores[chosen] = learn(chosen, single)
        i += size
    return scores, asked


def feed_kernel(learner: Learner, X: Any, y: np.ndarray, tasks: np.ndarray, seed: int) -> Any:
    """Kernel path: score_and_learn_many per block, score_and_learn_one for some single rows."""

    def learn(rows: np.ndarray, single: bool) -> np.ndarray:
        if single:
            j = int(rows[0])
            return np.array([learner.score_and_learn_one(X[j], float(y[j]), int(tasks[j]))])
        return learner.score_and_learn_many(X[rows], y[rows], tasks[rows])

    return feed(learner, X, tasks, seed, learn)


def feed_reference(
    learner: Any, X: Any, y: np.ndarray, tasks: np.ndarray, seed: int, batch: bool
) -> Any:
    """Reference path with the same blocks: numpy rounds row by row, or the numpy batch path."""

    def learn(rows: np.ndarray, single: bool) -> np.ndarray:
        if batch:
            prepared = learner._prepare_batch(X[rows], y[rows], tasks[rows])
            return np.asarray(learner._score_and_learn_batch_reference(*prepared))
        out = []
        for j in rows.tolist():
            v = learner._prepare(X[j])
            out.append(learner._decision(v, int(tasks[j])))
            learner._learn_reference(v, float(y[j]), int(tasks[j]))
        return np.array(out)

    return feed(learner, X, tasks, seed, learn)


def relative_deviation(got: Any, want: Any) -> float:
    """``max |got - want| / max |want|`` (0 for equal arrays or scalars)."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    spread = float(np.abs(got - want).max(initial=0.0))
    return spread / max(float(np.abs(want).max(initial=0.0)), 1e-300)


def float_state(learner: Learner, perm: np.ndarray | None = None) -> dict[str, Any]:
    """The float entries of the state; with ``perm``, feature axes put back in input order."""
    out = {}
    for key, value in learner.state_dict().items():
        if key in WARM_START:
            continue
        if isinstance(value, float) or (isinstance(value, np.ndarray) and value.dtype.kind == "f"):
            if perm is not None and np.ndim(value) and np.shape(value)[-1] == learner.dim:
                order = np.concatenate([np.argsort(perm), np.arange(perm.size, learner.dim)])
                value = np.asarray(value)[..., order]
            out[key] = value
    return out


def reference_spread(
    name: str, params: Mapping[str, Any], stream: Any, seed: int, batch: bool
) -> tuple[float, dict[str, float]]:
    """How far the reference moves when only its summation order changes.

    The same stream with its feature columns permuted: returns the relative deviation
    of the scores and of every float entry of the state (feature axes unpermuted).
    """
    X, y, tasks = stream
    K, d = int(tasks.max()) + 1, X.shape[1]
    perm = np.random.default_rng(seed).permutation(d)
    runs = []
    for columns in (np.arange(d), perm):
        learner = learners.make(name, n_features=d, n_tasks=K, seed=seed, **params)
        scores, _ = feed_reference(learner, X[:, columns], y, tasks, seed, batch)
        runs.append((scores, float_state(learner, columns)))
    (want, state), (moved, moved_state) = runs
    per_key = {key: relative_deviation(moved_state[key], state[key]) for key in state}
    return relative_deviation(moved, want), per_key


class LazySpread:
    """The bound of a deviation: ``RTOL``, or 100 times the reference's own movement
    (:func:`reference_spread`) where that is larger. The movement costs two more
    reference runs, so it is measured only for a deviation above ``RTOL``, which no
    larger bound can turn into a failure (the verdicts are those of measuring it always)."""

    def __init__(
        self, name: str, params: Mapping[str, Any], stream: Any, seed: int, batch: bool
    ) -> None:
        self._args = (name, params, stream, seed, batch)
        self._spread: tuple[float, dict[str, float]] | None = None

    def admits(self, deviation: float, key: str | None = None) -> bool:
        """Whether ``deviation`` (of the scores, or of the state entry ``key``) is in bounds."""
        if deviation <= RTOL:
            return True
        if self._spread is None:
            self._spread = reference_spread(*self._args)
        scores, state = self._spread
        return deviation <= 100.0 * (scores if key is None else state[key])


def compare(
    name: str,
    params: Mapping[str, Any],
    sparse: bool,
    seed: int,
    batch: bool,
    active: int | None = None,
) -> tuple[Learner, Learner]:
    """Run kernel and reference learners over one stream; assert they agree; return both."""
    K, d, n = 4, 12, 800
    X, y, tasks = stream = random_stream(sparse, n, K, d, seed, active)
    fast = learners.make(name, n_features=d, n_tasks=K, seed=seed, **params)
    slow = learners.make(name, n_features=d, n_tasks=K, seed=seed, **params)
    got, got_asked = feed_kernel(fast, X, y, tasks, seed)
    want, want_asked = feed_reference(slow, X, y, tasks, seed, batch)
    np.testing.assert_array_equal(got_asked, want_asked)
    np.testing.assert_array_equal(got >= 0.0, want >= 0.0)
    spread = LazySpread(name, params, stream, seed, batch)
    assert spread.admits(relative_deviation(got, want))
    fast_state, slow_state = fast.state_dict(), slow.state_dict()
    assert set(fast_state) == set(slow_state)
    floats = float_state(slow)
    for key, value in slow_state.items():
        if key in WARM_START:
            continue
        if key in floats:
            assert spread.admits(relative_deviation(fast_state[key], value), key), key
        elif isinstance(value, np.ndarray):
            np.testing.assert_array_equal(fast_state[key], value, err_msg=key)
        else:
            assert fast_state[key] == value, key
    assert fast.rng.bit_generator.state == slow.rng.bit_generator.state
    return fast, slow


def cases(names: tuple[str, ...]) -> list[Any]:
    return [
        pytest.param(name, params, id=f"{name}-{i}")
        for name in names
        for i, params in enumerate(learners.get(name).conformance_params)
    ]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize(("name", "params"), cases(OMTL))
def test_kernel_equals_the_numpy_rounds(name: str, params: dict[str, Any], sparse: bool) -> None:
    for seed in (1, 2):
        fast, _ = compare(name, params, sparse, seed, batch=False)
    assert fast.n_mistakes_ > 10


@pytest.mark.parametrize(("name", "params"), cases(OMTL))
def test_kernel_equals_the_gram_batch_path(name: str, params: dict[str, Any]) -> None:
    compare(name, params, sparse=False, seed=3, batch=True)


@pytest.mark.parametrize("name", OMTL)
def test_a_updates_happen_between_kernel_calls(name: str) -> None:
    """With A updated from round 20 on, every later mistake updates A once, in both paths."""
    fast, slow = compare(name, {"epoch_rounds": 20}, sparse=False, seed=4, batch=False)
    assert fast.n_a_updates_ == slow.n_a_updates_ > 100


@pytest.mark.parametrize("uses", ["post", "pre"])
@pytest.mark.parametrize("name", OMTL)
def test_a_changes_on_every_mth_mistake_in_both_paths(name: str, uses: str) -> None:
    """With ``a_update_every = 3`` A is updated exactly at the mistakes from round EPOCH on
    whose count is a multiple of 3, event by event, and the kernel's batches give the
    reference's numbers, dense and CSR (the 'post' form is also in the conformance sets)."""
    params: dict[str, Any] = {"epoch_rounds": 20, "a_update_every": 3, "a_update_uses": uses}
    X, y, tasks = random_stream(False, 800, 4, 12, 5, None)
    m = learners.make(name, n_features=12, n_tasks=4, seed=5, **params)
    due = changed = 0
    for x, label, t in zip(X, y.tolist(), tasks.tolist()):
        before, mistakes = m.relation_matrix(), m.n_mistakes_
        m.learn_one(x, label, t)
        due += m.n_mistakes_ > mistakes and m.n_rounds_ >= 20 and m.n_mistakes_ % 3 == 0
        changed += not np.array_equal(before, m.relation_matrix())
    assert m.n_a_updates_ == due > 50
    assert due // 2 < changed <= due
    for sparse in (False, True):
        fast, slow = compare(name, params, sparse=sparse, seed=6, batch=False)
        assert fast.n_a_updates_ == slow.n_a_updates_ > 30


@pytest.mark.parametrize("active", [1, 2])
@pytest.mark.parametrize("name", OMTL)
def test_kernel_equals_the_numpy_rounds_with_tasks_left_at_zero(name: str, active: int) -> None:
    """A updated from round 5 while only ``active`` of the 4 tasks have weights: the
    others are decoupled in every matrix decomposed, and both paths keep their rows of
    ``A^{-1}`` exactly zero off the diagonal (a rounding residue there would move a zero
    weight vector, and the sign of its score would then be noise). The literal covariance
    gets a ridge of 1e-3: with 1e-6 its inverse has condition numbers near 1e6, and two
    decompositions of it agree only to about 1e6 times the rounding (docs/algorithms.md Sec. 2.8)."""
    params: dict[str, Any] = {"epoch_rounds": 5}
    if name == "omtl-cov":
        params["ridge"] = 1e-3
    for seed in (1, 2):
        fast, _ = compare(name, params, sparse=False, seed=seed, batch=False, active=active)
    assert fast.n_a_updates_ > 100


@pytest.mark.parametrize("name", OMTL)
def test_kernel_equals_the_numpy_rounds_on_rows_of_few_features(name: str) -> None:
    """CSR rows of about 6 of 300 features: tasks share few features, so G and
    ``A^{-1} + eta G`` have exact zeros, and the zero scores of features a task never
    saw decide predictions by their sign. Where the floor does not bind, both paths
    keep the floored matrix as the matrix itself, exact zeros included."""
    K, d, n = 10, 300, 3000
    X, y, tasks = random_stream(True, n, K, d, seed=310)
    params: dict[str, Any] = {"epoch_rounds": 50}
    if name == "omtl-logdet":  # A^{-1} + eta G, unscaled, is the new A^{-1}
        params.update(a_update_uses="pre", normalize_trace=False)
    if name == "omtl-cov":  # the covariance is the new A^{-1}
        params.update(cov_is_A_inverse=True)
    fast = learners.make(name, n_features=d, n_tasks=K, seed=0, **params)
    slow = learners.make(name, n_features=d, n_tasks=K, seed=0, **params)
    got = np.concatenate(
        [fast.score_and_learn_many(X[i : i + 997], y[i : i + 997], tasks[i : i + 997])
         for i in range(0, n, 997)]
    )  # fmt: skip
    want, _ = feed_reference(slow, X, y, tasks, seed=0, batch=False)
    np.testing.assert_array_equal(got >= 0.0, want >= 0.0)
    # Over 500 eigendecompositions the reference itself moves by about 1e-12 when only its
    # summation order changes (von Neumann, 1.06e-12 on a machine with 4-lane sums), so
    # the bound is that of compare(): 100 times that movement, at least RTOL.
    assert LazySpread(name, params, (X, y, tasks), 0, False).admits(relative_deviation(got, want))
    assert fast.n_a_updates_ == slow.n_a_updates_ > 500


@pytest.mark.parametrize("name", OMTL)
def test_state_restored_midway_continues_identically(name: str) -> None:
    K, d = 3, 9
    X, y, tasks = random_stream(True, 400, K, d, seed=5)
    a = learners.make(name, n_features=d, n_tasks=K, epoch_rounds=50)
    a.score_and_learn_many(X[:200], y[:200], tasks[:200])
    b = learners.get(name).from_state_dict(a.state_dict())
    sa = a.score_and_learn_many(X[200:], y[200:], tasks[200:])
    sb = b.score_and_learn_many(X[200:], y[200:], tasks[200:])
    np.testing.assert_array_equal(sa, sb)


def test_warm_compiles_and_reports_seconds() -> None:
    seconds = omtl_kernels.warm()
    assert 0.0 <= seconds < 120.0
    assert omtl_kernels.warm() < 0.05  # compiled now: a second call only runs the tiny inputs
