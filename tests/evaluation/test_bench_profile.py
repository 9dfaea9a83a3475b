"""The profiler's naming of compiled code (``bench/perf/profile.py``), without ``perf`` itself."""

from __future__ import annotations

import gc

import numpy as np

import learners
from bench.perf.profile import compiled_functions, demangle, group_samples, write_perf_map


def test_demangle_gives_the_dotted_name_and_marks_the_python_wrappers():
    kernel = "_ZN8learners4amlc7kernels9amlc_passB2v3B62c8tJTIeFIjxB2IKSgI4CrvQClYb5wBbdC9XqRE"
    assert demangle(kernel) == "learners.amlc.kernels.amlc_pass"
    assert demangle("cfunc." + kernel) == "learners.amlc.kernels.amlc_pass [wrapper]"
    assert demangle("_ZN7cpython8learners7kernels3dotB2v1E") == "learners.kernels.dot [wrapper]"
    assert demangle("__ieee754_exp_fma") == "__ieee754_exp_fma"


def test_the_map_names_the_machine_code_a_learner_runs(tmp_path):
    model = learners.make("cmtl", n_features=5, n_tasks=2)
    rows = np.arange(15.0).reshape(3, 5)
    model.score_and_learn_many(rows, np.array([1.0, -1.0, 1.0]), np.array([0, 1, 0]))
    gc.freeze()  # as the API's start-up does in a process the suite shares
    try:
        functions = compiled_functions()
    finally:
        gc.unfreeze()
    names = {demangle(symbol) for symbol in functions.values()}
    assert "learners.kernels.dot" in names
    assert any(name.startswith("learners.perceptron.kernels.") for name in names)
    assert write_perf_map(functions, tmp_path / "perf-1.map") == len(functions)
    lines = (tmp_path / "perf-1.map").read_text().splitlines()
    starts = [int(line.split()[0], 16) for line in lines]
    sizes = [int(line.split()[1], 16) for line in lines]
    assert starts == sorted(functions)
    assert all(a + size <= b for a, size, b in zip(starts, sizes, starts[1:], strict=False))
    assert {line.split(maxsplit=2)[2] for line in lines} == set(functions.values())


def test_samples_group_by_compiled_function_and_otherwise_by_library():
    rows = [
        (20.0, "[JIT] tid 7", "_ZN8learners7kernels3dotB2v1E"),
        (5.0, "[JIT] tid 7", "cfunc._ZN8learners7kernels3dotB2v1E"),
        (10.0, "[JIT] tid 7", "_ZN8learners7kernels3dotB2v9E"),
        (3.0, "libm.so.6", "__ieee754_exp_fma"),
        (2.0, "libm.so.6", "__expm1_fma"),
        (1.0, "[JIT] tid 7", "0x00007f0000001000"),
    ]
    assert group_samples(rows) == {
        "learners.kernels.dot": 30.0,
        "learners.kernels.dot [wrapper]": 5.0,
        "libm.so.6": 5.0,
        "compiled code outside the map": 1.0,
    }
