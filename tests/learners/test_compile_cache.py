"""numba's cache directory is keyed by the source of every compiled module."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numba
import numba.core.config
import pytest

import learners
from learners import compile_cache, kernels
from learners.amlc import kernels as amlc_kernels


def _copy_package(tmp_path: Path) -> Path:
    root = tmp_path / "learners"
    shutil.copytree(compile_cache.PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_kernels_cache_under_the_source_keyed_directory():
    directory = Path(numba.config.CACHE_DIR)
    assert directory.name == compile_cache.source_hash()
    for fn in (kernels.dot, amlc_kernels.amlc_pass):
        assert Path(fn._cache._cache_path).is_relative_to(directory)


def test_a_changed_helper_gives_a_new_directory(tmp_path):
    root = _copy_package(tmp_path)
    before = compile_cache.source_hash(root)
    assert before == compile_cache.source_hash(compile_cache.PACKAGE_ROOT)
    helper = root / "kernels.py"  # inlined into the kernels of every family
    helper.write_text(helper.read_text().replace("return (a0 + a1) + (a2 + a3)", "return a0"))
    changed = compile_cache.source_hash(root)
    assert changed != before
    family = root / "active" / "kernels.py"
    family.write_text(family.read_text() + "\n# a comment changes the source too\n")
    assert compile_cache.source_hash(root) not in (before, changed)


def test_modules_without_compiled_code_do_not_change_the_directory(tmp_path):
    root = _copy_package(tmp_path)
    before = compile_cache.source_hash(root)
    registry = root / "registry.py"
    registry.write_text(registry.read_text() + "\n# no kernel here\n")
    assert compile_cache.source_hash(root) == before


def test_a_user_cache_dir_is_the_parent(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", numba.core.config.CACHE_DIR)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    directory = compile_cache.use_source_keyed_cache()
    assert directory == tmp_path / "mine" / compile_cache.source_hash()
    assert str(directory) == numba.core.config.CACHE_DIR
    assert compile_cache.use_source_keyed_cache() == directory  # not nested twice


def test_the_user_cache_home_and_a_temporary_fallback(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", numba.core.config.CACHE_DIR)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert compile_cache.use_source_keyed_cache().parent == tmp_path / "cache" / "omtl" / "numba"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    parent = compile_cache.cache_parent()
    assert parent.parent == Path(tempfile.gettempdir())
    assert parent.name.startswith("omtl-numba-")


@pytest.mark.parametrize("text", ["import numba\n", "from numba import njit\n"])
def test_a_new_compiled_module_counts(tmp_path, text):
    root = _copy_package(tmp_path)
    before = compile_cache.source_hash(root)
    (root / "extra_kernels.py").write_text(text)
    assert compile_cache.source_hash(root) != before


def test_the_complete_mark_follows_what_numba_checks(tmp_path):
    """The mark holds each compiled module's path, size and modification time: numba
    compiles a kernel again when these change, so the mark stops being valid with them."""
    root = _copy_package(tmp_path)
    directory = tmp_path / "cache"
    assert not compile_cache.is_complete(directory, root)
    compile_cache.mark_complete(directory, root)
    assert compile_cache.is_complete(directory, root)
    other = _copy_package(tmp_path / "elsewhere")  # the same sources at another path
    assert not compile_cache.is_complete(directory, other)
    family = root / "rom" / "kernels.py"
    stat = family.stat()
    os.utime(family, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # same source, touched
    assert not compile_cache.is_complete(directory, root)
    compile_cache.mark_complete(directory, root)
    registry = root / "registry.py"  # no kernel: not part of the mark
    registry.write_text(registry.read_text() + "\n# no kernel here\n")
    assert compile_cache.is_complete(directory, root)


def test_a_process_on_a_complete_cache_loads_no_kernel_at_start_up():
    """After a full warm-up has marked the cache, :func:`learners.ensure_kernels` in a new
    process compiles and loads nothing (each kernel loads at its first call), and the first
    learner call then loads its kernel from the cache instead of compiling it."""
    out = _in_a_new_process(
        "print(learners.ensure_kernels(), len(k.adaptive_pass.overloads))\n"
        "m = learners.make('adaptive-logistic', n_features=3, n_tasks=2)\n"
        "m.score_and_learn_many(np.ones((2, 3)), np.array([1.0, -1.0]), np.array([0, 1]))\n"
        "print(len(k.adaptive_pass.overloads), sum(k.adaptive_pass._cache_hits.values()),"
        " sum(k.adaptive_pass._cache_misses.values()))\n"
    )
    assert out[0] == "False 0"
    assert out[1] == "1 1 0"


def test_load_kernels_loads_one_learners_kernels_once():
    """What the worker and the API do per model: the learner's kernels are loaded (from the
    cache, none compiled), another family's are not, and a second call does nothing."""
    out = _in_a_new_process(
        "from learners.omtl import kernels as omtl\n"
        "print(learners.load_kernels('adaptive-logistic', {'loss': 'hinge'}),"
        " learners.load_kernels('adaptive-logistic', {'loss': 'hinge'}),"
        " len(k.adaptive_pass.overloads), sum(k.adaptive_pass._cache_misses.values()),"
        " len(omtl._weight_pass.overloads))\n"
        # hyperparameters of a larger model: the defaults of the learner are run instead
        "print(learners.load_kernels('mmperc', {'task_dims': [5, 6, 7]}))\n"
    )
    assert out[0] == "True False 1 0 0"
    assert out[1] == "True"


def _in_a_new_process(code: str) -> list[str]:
    """The output lines of ``code`` run in a new process (with ``learners``, numpy as
    ``np`` and the adaptive kernels as ``k`` imported) once this one has made the cache
    complete."""
    learners.ensure_kernels()
    assert learners.kernels_cached()
    head = "import learners, numpy as np\nfrom learners.adaptive import kernels as k\n"
    return subprocess.run(
        [sys.executable, "-c", head + code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split("\n")


def test_ensure_kernels_runs_once_per_process(monkeypatch):
    learners.ensure_kernels(load=True)

    def fail(*args: object) -> None:
        raise AssertionError("warm_kernels ran again")

    monkeypatch.setattr(learners, "warm_kernels", fail)
    monkeypatch.setattr(learners, "kernels_cached", lambda: False)
    assert learners.ensure_kernels() is False
    assert learners.ensure_kernels(load=True) is False


def test_load_puts_every_kernel_into_a_process_on_a_complete_cache():
    """The API's start-up (``load=True``): nothing compiles, every kernel is loaded."""
    out = _in_a_new_process(
        "print(learners.ensure_kernels(load=True), len(k.adaptive_pass.overloads),"
        " sum(k.adaptive_pass._cache_misses.values()))\n"
    )[0].split()
    assert out[0] == "False" and int(out[1]) >= 1 and out[2] == "0"
