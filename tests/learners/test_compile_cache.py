"""numba's cache directory is keyed by the source of every compiled module."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numba
import numba.core.config
import pytest

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
