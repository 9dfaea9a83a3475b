"""The packages depend on each other in one direction: ``service`` -> ``evaluation`` -> ``learners``.

``learners`` is pure maths and imports neither of the others; the offline
harness ``evaluation`` uses ``learners`` but never the service. The benchmarks
(``bench``) use all three and what they share with the tests (a learner that fails
on purpose, the data streams) lives in ``bench``, never in ``tests``. The check reads
the syntax tree of every module, so an import inside a function or under
``TYPE_CHECKING`` counts as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Top-level packages each package must not import.
FORBIDDEN = {
    "learners": {"service", "evaluation", "bench"},
    "evaluation": {"service", "bench"},
    "bench": {"tests"},
}


def imported_packages(source: str) -> set[str]:
    """The top-level packages named by the absolute imports of a module's source."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def violations(package: str) -> list[str]:
    """``path: name`` for every import of a forbidden package under ``package``."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = imported_packages(path.read_text()) & FORBIDDEN[package]
        found.extend(f"{path.relative_to(ROOT)}: {name}" for name in sorted(bad))
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_lower_layers(package: str) -> None:
    assert list((ROOT / package).rglob("*.py")), f"{package}/ has no modules"
    assert violations(package) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import service.api.app\n", {"service"}),
        ("from service.store import codec\n", {"service"}),
        ("def f():\n    from evaluation.dataset import Dataset\n", {"evaluation"}),
        ("if TYPE_CHECKING:\n    import service as s\n", {"service"}),
        ("from . import common\nfrom .dataset import Dataset\n", set()),
        ("import numpy as np, scipy.linalg\n", {"numpy", "scipy"}),
    ],
)
def test_imported_packages_sees_every_absolute_import(source: str, expected: set[str]) -> None:
    assert imported_packages(source) == expected
