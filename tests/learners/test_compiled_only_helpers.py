"""Helpers compiled without a Python wrapper (``learners.kernels.ROW_HELPER``) are called
from compiled code only: a call from Python would jump to a null address and crash the
process, so no Python code of the repository may name one."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from learners.adaptive.kernels import leader
from learners.kernels import ROW_HELPER, ROW_KERNEL

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("learners", "service", "evaluation", "bench", "tests")


def _trees() -> Iterator[tuple[Path, ast.Module]]:
    for folder in SOURCES:
        for path in sorted((REPO / folder).rglob("*.py")):
            yield path, ast.parse(path.read_text(), filename=str(path))


def _is_njit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (getattr(target, "id", None) or getattr(target, "attr", None)) == "njit"


def _spreads(decorator: ast.expr, options: str) -> bool:
    """Whether ``decorator`` is a call that spreads ``**options``."""
    return isinstance(decorator, ast.Call) and any(
        k.arg is None and isinstance(k.value, ast.Name) and k.value.id == options
        for k in decorator.keywords
    )


def _compiled_only(trees: list[tuple[Path, ast.Module]]) -> set[str]:
    return {
        node.name
        for _, tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and any(_spreads(d, "ROW_HELPER") for d in node.decorator_list)
    }


def _python_references(tree: ast.Module, names: set[str]) -> Iterator[tuple[str, int]]:
    """Where code that Python runs (outside compiled function bodies and imports) names
    one of ``names``, as a variable or an attribute."""

    def visit(node: ast.AST, compiled: bool) -> Iterator[tuple[str, int]]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inner = any(_is_njit(d) for d in node.decorator_list)
            for child in node.body:
                yield from visit(child, inner)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            return
        if not compiled:
            if isinstance(node, ast.Name) and node.id in names:
                yield node.id, node.lineno
            elif isinstance(node, ast.Attribute) and node.attr in names:
                yield node.attr, node.lineno
        for child in ast.iter_child_nodes(node):
            yield from visit(child, compiled)

    yield from visit(tree, False)


def test_no_python_code_names_a_helper_compiled_without_a_wrapper():
    trees = list(_trees())
    helpers = _compiled_only(trees)
    assert len(helpers) > 50  # the scan finds the helpers (every family has some)
    found = [
        f"{path.relative_to(REPO)}:{line} names {name}"
        for path, tree in trees
        for name, line in _python_references(tree, helpers)
    ]
    assert not found, "compile these with ROW_KERNEL or call them from compiled code:\n" + (
        "\n".join(found)
    )


def test_the_scan_sees_a_python_call_of_a_helper():
    source = (
        "from numba import njit\n"
        "@njit(**ROW_HELPER)\n"
        "def helper(a):\n    return a\n"
        "@njit(**ROW_KERNEL)\n"
        "def entry(a):\n    return helper(a)\n"
        "def python_side(a):\n    return entry(a) + helper(a)\n"
    )
    tree = ast.parse(source)
    helpers = _compiled_only([(Path("x.py"), tree)])
    assert helpers == {"helper"}
    assert list(_python_references(tree, helpers)) == [("helper", 9)]


def test_helpers_lack_the_python_wrapper_and_kernels_keep_it():
    assert ROW_HELPER["no_cpython_wrapper"] and "no_cpython_wrapper" not in ROW_KERNEL
    assert leader(np.array([3, 1, 1], dtype=np.int64)) == 1  # a ROW_KERNEL function
    assert leader.targetoptions.get("no_cpython_wrapper") is None
