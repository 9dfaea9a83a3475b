"""The shared compiled helpers (learners.kernels) and the kernel-vs-reference harness."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import learners
from learners import kernels
from learners.checks.kernels import compare_with_reference, noisy_stream
from learners.inputs import _log_scale
from learners.perceptron import kernels as linear_kernels
from learners.perceptron import pnorm_kernels, second_order_kernels
from learners.perceptron.linear import IndependentPerceptrons
from learners.perceptron.multitask import PooledPerceptronReference
from learners.warm_claims import family_name


@pytest.mark.parametrize("d", [1, 3, 4, 9, 100])
def test_dense_and_sparse_rows_give_bit_identical_dots(d):
    rng = np.random.default_rng(d)
    w, u = rng.normal(size=d), rng.normal(size=d)
    x = rng.normal(size=d) * (rng.random(d) < 0.6)
    idx = np.flatnonzero(x)
    dense = kernels.dot(w, kernels.NO_INDEX, x)
    assert dense == kernels.dot(w, idx, x[idx])
    assert dense == pytest.approx(float(w @ x), rel=1e-13, abs=1e-15)
    assert kernels.dot2(u, w, kernels.NO_INDEX, x) == kernels.dot2(u, w, idx, x[idx])
    assert kernels.dot2(u, w, idx, x[idx])[1] == dense
    assert kernels.dot_sqnorm(w, idx, x[idx]) == kernels.dot_sqnorm(w, kernels.NO_INDEX, x)
    assert kernels.dot_sqnorm(w, idx, x[idx])[1] == pytest.approx(float(x @ x), rel=1e-13)
    target = w.copy()
    kernels.axpy(target, -0.5, idx, x[idx])
    np.testing.assert_array_equal(target, w - 0.5 * x)


def _lanes(w: np.ndarray, x: np.ndarray) -> float:
    """The documented summation order, in plain Python floats: product k of the row's
    non-zeros into lane k mod 4, then (a0 + a1) + (a2 + a3)."""
    lanes = [0.0, 0.0, 0.0, 0.0]
    for k, j in enumerate(np.flatnonzero(x)):
        lanes[k % 4] += float(w[j]) * float(x[j])
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])


@pytest.mark.parametrize("d", [1, 4, 7, 64, 1001])
@pytest.mark.parametrize("zeros", [False, True])
def test_dense_dots_follow_the_documented_lanes_bit_for_bit(d, zeros):
    rng = np.random.default_rng(d + zeros)
    w, u = rng.normal(size=d), rng.normal(size=d) * 1e3
    x = rng.normal(size=d)
    if zeros:
        x[rng.random(d) < 0.3] = 0.0
        x[0] = 0.0
    no = kernels.NO_INDEX
    assert kernels.dot(w, no, x) == _lanes(w, x)
    assert kernels.dot2(u, w, no, x) == (_lanes(u, x), _lanes(w, x))
    assert kernels.dot_sqnorm(w, no, x) == (_lanes(w, x), _lanes(x, x))
    x32 = x.astype(np.float32)
    assert kernels.dot(w, no, x32) == _lanes(w, x32.astype(np.float64))
    assert kernels.dot2(u, w, no, x32) == (_lanes(u, x32), _lanes(w, x32))
    # a strided weight row takes the scalar lanes: the same numbers
    wide = np.repeat(w, 2)[::2]
    assert kernels.dot(wide, no, x) == _lanes(w, x)
    idx = np.flatnonzero(x)
    assert kernels.dot2(u, w, idx, x[idx]) == (_lanes(u, x), _lanes(w, x))
    assert kernels.dot_sqnorm(w, idx, x[idx]) == (_lanes(w, x), _lanes(x, x))


@pytest.mark.parametrize("sparse", [False, True])
def test_axpy2_updates_both_vectors_as_two_axpys(sparse):
    rng = np.random.default_rng(3)
    u, w = rng.normal(size=50), rng.normal(size=50)
    x = rng.normal(size=50) * (rng.random(50) < 0.5)
    idx = np.flatnonzero(x) if sparse else kernels.NO_INDEX
    val = x[idx] if sparse else x
    u1, w1, u2, w2 = u.copy(), w.copy(), u.copy(), w.copy()
    kernels.axpy2(u1, w1, -0.7, idx, val)
    kernels.axpy(u2, -0.7, idx, val)
    kernels.axpy(w2, -0.7, idx, val)
    np.testing.assert_array_equal(u1, u2)
    np.testing.assert_array_equal(w1, w2)
    assert not np.array_equal(u1, u)


@pytest.mark.parametrize("n", [1, 3, 8, 1001, 100_003])
def test_all_finite_finds_every_nan_and_inf(n):
    rng = np.random.default_rng(n)
    a = rng.normal(size=n) * 1e307
    assert kernels.all_finite(a)
    for pos in {0, n // 2, n - 1}:
        for bad in (np.nan, np.inf, -np.inf):
            b = a.copy()
            b[pos] = bad
            assert not kernels.all_finite(b)


_FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(0, 300), elements=_FLOATS))
def test_copy_signs_gives_the_bits_of_numpy_copysign(values):
    """Signed zeros, subnormals and the largest floats included: the compiled sign restore
    of the log scaling is bit for bit ``np.copysign``."""
    magnitudes = np.abs(values[::-1]).copy()
    want = np.copysign(magnitudes, values)
    kernels.copy_signs(magnitudes, values)
    np.testing.assert_array_equal(magnitudes.view(np.int64), want.view(np.int64))


@pytest.mark.parametrize(
    "values",
    [
        np.array([[3.0, -0.0, -1.0], [0.0, 1e-310, -7.5]]),  # C-contiguous 2-D: compiled
        np.array([[3.0, -0.0, -1.0], [0.0, 1e-310, -7.5]]).T,  # strided: numpy's copysign
        np.array([2.0, -3.0, -0.0], dtype=np.float32),  # float32: numpy's copysign
        np.linspace(-5.0, 5.0, 1001),
    ],
)
def test_log_scale_is_the_numpy_formula_to_the_bit_in_every_layout(values):
    want = np.copysign(np.log1p(np.abs(values)), values)
    got = _log_scale(values)
    assert got.dtype == want.dtype and got.shape == want.shape
    bits = [np.ascontiguousarray(a).view(np.uint8) for a in (got, want)]
    np.testing.assert_array_equal(*bits)


def test_the_harness_catches_a_kernel_that_is_not_its_reference():
    kernel = IndependentPerceptrons(n_features=10, n_tasks=4)
    stream = noisy_stream(kernel, n=300, seed=0)
    with pytest.raises(AssertionError):
        compare_with_reference(
            lambda: IndependentPerceptrons(n_features=10, n_tasks=4),
            lambda: PooledPerceptronReference(n_features=10, n_tasks=4),
            stream,
            sparse=False,
        )
    compare_with_reference(
        lambda: IndependentPerceptrons(n_features=10, n_tasks=4),
        lambda: IndependentPerceptrons.reference_class(n_features=10, n_tasks=4),
        stream,
        sparse=True,
    )


FAMILY = (linear_kernels, pnorm_kernels, second_order_kernels)


def _compiled(fn: object) -> int:
    return len(fn.signatures)  # type: ignore[attr-defined]


KERNELS = [
    *(getattr(linear_kernels, f) for f in ("step", "decide_dense", "learn_one_dense")),
    *(getattr(module, f) for module in FAMILY for f in ("learn_dense", "learn_csr")),
    pnorm_kernels.step,
    second_order_kernels.step,
]


def test_warm_up_claims_share_the_families_between_processes(tmp_path):
    """``claims``: processes given the same directory each warm the families no other has
    claimed (``make warm``); between them every family once, the learner sweep never."""
    full = learners.warm_kernels()
    first = learners.warm_kernels(claims=tmp_path / "claims")
    second = learners.warm_kernels(claims=tmp_path / "claims")
    assert set(first) == set(full) - {"learners.kernels.warm_every_learner"}
    assert second == {}
    names = sorted(p.name for p in (tmp_path / "claims").iterdir())
    assert names == sorted([*first, *(f"{name}.done" for name in first)])


def test_kernels_are_cached_and_warm_up_covers_every_public_path():
    seconds = learners.warm_kernels()
    assert list(seconds)[-1] == "learners.kernels.warm_every_learner"
    assert list(seconds)[:-1] == [family_name(fn) for fn in kernels._WARMUPS]
    assert {
        "learners.perceptron.kernels.warm_linear_kernels",
        "learners.perceptron.pnorm_kernels.warm_pnorm_kernels",
        "learners.perceptron.second_order_kernels.warm_second_order_kernels",
    } <= set(seconds)
    assert all(s >= 0.0 for s in seconds.values())
    for fn in KERNELS:
        assert type(fn._cache).__name__ != "NullCache", f"{fn.__name__} is not cached"
    before = [_compiled(fn) for fn in KERNELS]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 6))
    X[X < 0] = 0.0
    y = np.where(rng.random(50) < 0.5, 1.0, -1.0)
    tasks = rng.integers(0, 3, size=50)
    readonly = X.copy()
    readonly.flags.writeable = False
    for name in ("ipl", "cmtl", "pa-global", "cmtl-pnorm", "cmtl-second-order"):
        model = learners.make(name, n_features=6, n_tasks=3)
        model.score_and_learn_many(X, y, tasks)
        model.score_and_learn_many(readonly, y, tasks)
        model.score_and_learn_many(sp.csr_matrix(X), y, tasks)
        for x, label, t in zip(X, y.tolist(), tasks.tolist(), strict=True):
            model.predict_one(x, t)
            model.learn_one(x, label, t)
            idx = np.flatnonzero(x)
            idx.flags.writeable = False
            model.learn_one((idx, x[x != 0]), label, t)
    assert [_compiled(fn) for fn in KERNELS] == before, "a learner call compiled a new kernel"


@pytest.mark.parametrize("name", ["cmtl", "ipl", "pa-individual"])
def test_lean_calls_reject_bad_x_and_change_nothing(name):
    model = learners.make(name, n_features=4, n_tasks=2)
    model.learn_one(np.array([1.0, -2.0, 0.5, 1.0]), -1, 0)
    before = model.state_dict()
    for bad in (np.array([1.0, np.nan, 0.0, 1.0]), np.array([np.inf, 1.0, 1.0, 1.0])):
        with pytest.raises(ValueError, match="NaN or infinite"):
            model.score_and_learn_one(bad, 1.0, 0)
        with pytest.raises(ValueError, match="NaN or infinite"):
            model.predict_one(bad, 1)
    after = model.state_dict()
    for key, value in before.items():
        np.testing.assert_array_equal(np.asarray(after[key]), np.asarray(value))


def test_other_array_kinds_give_the_result_of_a_float64_row():
    """Read-only and strided rows (the lane, as a copy) and a list (the general path)
    learn what the C-contiguous float64 row learns."""
    x = np.array([1.0, -2.0, 0.5, 3.0])
    a = learners.make("cmtl", n_features=4, n_tasks=2)
    b = learners.make("cmtl", n_features=4, n_tasks=2)
    readonly = x.copy()
    readonly.flags.writeable = False
    strided = np.repeat(x, 2)[::2]
    for form in (readonly, strided, x.astype(np.float32).astype(np.float64), [1, -2, 0.5, 3]):
        assert a.score_and_learn_one(form, 1, 1) == b.score_and_learn_one(x, 1.0, 1)
    np.testing.assert_array_equal(a.task_weights(), b.task_weights())


@pytest.mark.parametrize("name", ["cmtl", "ipl", "pt-global", "pa-global", "pa-individual"])
def test_float32_rows_take_the_lean_lane_as_their_float64_values(name, monkeypatch):
    """The rows the worker reads from the log (float32, read-only where read in place)
    take the lean lane as a float64 copy, without the general validation, and score and
    learn exactly what their float64 values do; a NaN among them is still refused with
    nothing changed."""
    X, y, tasks = _labelled_stream(13)
    X32 = X.astype(np.float32)
    read_only = np.frombuffer(X32.tobytes(), np.float32).reshape(X32.shape)
    rows32 = learners.make(name, n_features=6, n_tasks=3)
    rows64 = learners.make(name, n_features=6, n_tasks=3)

    def general_path(*args: object) -> None:
        raise AssertionError("the general validation ran")

    monkeypatch.setattr(rows32, "_prepare", general_path)
    for i, (label, t) in enumerate(zip(y.tolist(), tasks.tolist(), strict=True)):
        x32 = read_only[i] if i % 2 else X32[i]
        x64 = X32[i].astype(np.float64)
        assert rows32.decision_one(x32, t) == rows64.decision_one(x64, t)
        assert rows32.predict_one(x32, t) == rows64.predict_one(x64, t)
        assert rows32.score_and_learn_one(x32, label, t) == rows64.score_and_learn_one(
            x64, label, t
        )
    counter = type(rows32).update_counter
    assert getattr(rows32, counter) == getattr(rows64, counter) > 0
    np.testing.assert_array_equal(rows32.task_weights(), rows64.task_weights())
    monkeypatch.undo()
    before = rows32.state_dict()
    bad = X32[0].copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        rows32.score_and_learn_one(bad, 1.0, 0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        rows32.decision_one(bad, 0)
    for key, value in before.items():
        np.testing.assert_array_equal(np.asarray(rows32.state_dict()[key]), np.asarray(value))


@pytest.mark.parametrize("name", ["cmtl", "ipl", "pa-global"])
def test_a_late_bad_row_of_a_large_batch_changes_nothing(name):
    """Large dense batches are checked by the kernel pass; the weights are restored."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 5))
    y = np.where(rng.random(400) < 0.5, 1.0, -1.0)
    tasks = rng.integers(0, 3, size=400)
    model = learners.make(name, n_features=5, n_tasks=3)
    model.score_and_learn_many(X[:100], y[:100], tasks[:100])
    before = model.state_dict()
    bad = X.copy()
    bad[350, 2] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        model.score_and_learn_many(bad, y, tasks)
    after = model.state_dict()
    for key, value in before.items():
        np.testing.assert_array_equal(np.asarray(after[key]), np.asarray(value), err_msg=key)
    np.testing.assert_array_equal(
        model.score_and_learn_many(X, y, tasks),
        learners.from_state_dict(before).score_and_learn_many(X, y, tasks),
    )


def compiled_signatures() -> dict[str, int]:
    """How many specialisations every numba kernel of the package has compiled so far."""
    from numba.core.registry import CPUDispatcher

    counts = {}
    for module_name, module in list(sys.modules.items()):
        if module_name == "learners" or module_name.startswith("learners."):
            for name, value in vars(module).items():
                if isinstance(value, CPUDispatcher):
                    counts[f"{value.py_func.__module__}.{name}"] = len(value.signatures)
    return counts


def kernel_compiles() -> int:
    """How many specialisations the numba kernels of the package have compiled in this
    process (a cache miss each; a kernel loaded from the cache is a hit)."""
    from numba.core.registry import CPUDispatcher

    total = 0
    for module_name, module in list(sys.modules.items()):
        if module_name == "learners" or module_name.startswith("learners."):
            for value in vars(module).values():
                if isinstance(value, CPUDispatcher):
                    total += sum(value._cache_misses.values())
    return total


def test_after_warm_up_no_learner_call_compiles():
    """Every registered learner, other sizes than the warm-up's, dense, CSR and per event."""
    learners.warm_kernels()
    before = compiled_signatures()
    assert sum(1 for n in before.values() if n) >= 15  # cached callers load without callees
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 5))
    X[X < 0.3] = 0.0
    y = np.where(rng.random(30) < 0.5, 1.0, -1.0)
    tasks = rng.integers(0, 3, size=30)
    for info in learners.available():
        model = learners.make(info.name, n_features=5, n_tasks=3)
        model.score_and_learn_many(X, y, tasks)
        model.score_and_learn_many(sp.csr_matrix(X), y, tasks)
        # the worker's rows: float32, read-only where read in place from a log entry
        model.score_and_learn_many(
            np.frombuffer(X.astype(np.float32).tobytes(), np.float32).reshape(X.shape), y, tasks
        )
        for x, label, t in zip(X[:4], y.tolist(), tasks.tolist(), strict=False):
            model.predict_one(x, t)
            model.learn_one(sp.csr_matrix(x), label, t)
            model.score_and_learn_one(x, label, t)
    assert compiled_signatures() == before, "a learner call compiled a new kernel"


def test_after_warm_up_no_multiview_round_compiles():
    """The passes over rounds of views (``mmperc`` in both forms, ``matrix-pnorm``), other
    sizes than the warm-up's: a multiview model's first batch of rounds compiles nothing."""
    learners.warm_kernels()
    before = compiled_signatures()
    rng = np.random.default_rng(4)
    dims = [4, 2, 3]
    views = [rng.normal(size=(6, d)) for d in dims]
    y = np.where(rng.random(6) < 0.5, 1.0, -1.0)
    tasks = rng.integers(0, 3, size=6)
    for name, params in (
        ("mmperc", {"form": "primal", "task_dims": dims}),
        ("mmperc", {"form": "dual", "task_dims": dims}),
        ("matrix-pnorm", {"p": 3}),
    ):
        model = learners.make(name, n_features=4, n_tasks=3, **params)
        rounds = views if name == "mmperc" else [rng.normal(size=(6, 4)) for _ in dims]
        model.score_and_learn_views_many(rounds, y, tasks)
        model.score_and_learn_views([v[0] for v in rounds], 1.0, 2)
    assert compiled_signatures() == before, "a round of views compiled a new kernel"


def _labelled_stream(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """300 random rows of 6 features, random labels, 3 tasks."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 6))
    y = np.where(rng.random(300) < 0.5, 1.0, -1.0)
    return X, y, rng.integers(0, 3, size=300)


@pytest.mark.parametrize("name", ["cmtl", "ipl", "pt-global", "pa-global", "pa-individual"])
def test_per_event_lean_calls_match_one_batch_call_with_their_update_counts(name):
    """predict_one + learn_one with int and float labels (the lean lane, straight to the
    kernels' machine code) learn exactly what one batch call learns, counts included."""
    X, y, tasks = _labelled_stream(11)
    one = learners.make(name, n_features=6, n_tasks=3)
    many = learners.make(name, n_features=6, n_tasks=3)
    scores = many.score_and_learn_many(X, y, tasks)
    for i, (x, label, t) in enumerate(zip(X, y.tolist(), tasks.tolist(), strict=True)):
        assert one.predict_one(x, t) == (1 if scores[i] >= 0.0 else -1)
        one.learn_one(x, int(label) if i % 2 else label, t)
    counter = type(one).update_counter
    assert getattr(one, counter) == getattr(many, counter) > 0
    np.testing.assert_array_equal(one.task_weights(), many.task_weights())


@pytest.mark.parametrize("name", ["cmtl", "ipl", "pt-global", "pa-global", "pa-individual"])
def test_numpy_scalar_labels_and_tasks_take_the_lean_lane(name, monkeypatch):
    """A loop over numpy arrays hands over ``numpy.float64`` labels and ``numpy.int64``
    tasks: they take the lean lane (no general validation, which would cost 3-4x the
    call) and learn exactly what Python scalars do."""
    X, y, tasks = _labelled_stream(12)
    numpy_scalars = learners.make(name, n_features=6, n_tasks=3)
    python_scalars = learners.make(name, n_features=6, n_tasks=3)

    def general_path(*args: object) -> None:
        raise AssertionError("the general validation ran")

    monkeypatch.setattr(numpy_scalars, "_prepare", general_path)
    for x, label, t, py_label, py_t in zip(X, y, tasks, y.tolist(), tasks.tolist(), strict=True):
        assert type(label) is np.float64 and type(t) is np.int64
        assert numpy_scalars.predict_one(x, t) == python_scalars.predict_one(x, py_t)
        assert numpy_scalars.decision_one(x, t) == python_scalars.decision_one(x, py_t)
        assert numpy_scalars.score_and_learn_one(x, label, t) == (
            python_scalars.score_and_learn_one(x, py_label, py_t)
        )
    counter = type(numpy_scalars).update_counter
    assert getattr(numpy_scalars, counter) == getattr(python_scalars, counter) > 0
    np.testing.assert_array_equal(numpy_scalars.task_weights(), python_scalars.task_weights())
    monkeypatch.undo()
    with pytest.raises(ValueError, match="label"):
        numpy_scalars.score_and_learn_one(X[0], np.float64(0.5), np.int64(0))
    with pytest.raises(ValueError, match="task"):
        numpy_scalars.score_and_learn_one(X[0], np.float64(1.0), np.int64(3))
