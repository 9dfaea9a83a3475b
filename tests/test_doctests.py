"""The examples in the docs run and show what they claim.

* Every ``>>>`` example in a module of ``learners``, ``evaluation`` and
  ``service`` runs under :mod:`doctest` (one test per module with examples).
* The Python code blocks of README.md run, in README order and in one
  namespace (later blocks build on earlier ones, as a reader would type them).
  Blocks that talk to Redis run against the test session's server: the
  README's example URL is replaced by the fixture's. Blocks that need a
  running API and a person are skipped, each with its reason.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil
import re
from collections.abc import Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
import redis

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: Packages whose modules are searched for examples. ``evaluation`` is a top-level
#: package of the repository; before it existed the harness lived in ``service``.
PACKAGES = ("learners", "evaluation", "service")

#: Modules that must keep an example: the contract's usage is shown there.
MUST_HAVE_EXAMPLES = ("learners", "learners.base")

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


# ------------------------------------------------------------------ docstrings
def _package_modules() -> Iterator[str]:
    for name in PACKAGES:
        try:
            package = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        yield name
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            if not info.name.endswith(".__main__"):
                yield info.name


def _examples(module: ModuleType) -> list[doctest.DocTest]:
    return [t for t in doctest.DocTestFinder().find(module) if t.examples]


MODULES_WITH_EXAMPLES = sorted(
    name for name in _package_modules() if _examples(importlib.import_module(name))
)


def test_the_contract_modules_show_examples() -> None:
    missing = [name for name in MUST_HAVE_EXAMPLES if name not in MODULES_WITH_EXAMPLES]
    assert missing == []


@pytest.mark.parametrize("name", MODULES_WITH_EXAMPLES)
def test_docstring_examples_run(name: str) -> None:
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report = io.StringIO()
    for test in _examples(importlib.import_module(name)):
        runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, report.getvalue()


# ------------------------------------------------------------------ README
@dataclass(frozen=True)
class Block:
    """One fenced Python block of the README."""

    line: int
    code: str


#: Blocks that cannot run in a test, recognised by a line they contain, and why.
NOT_RUN = {
    "ask_a_human(": "needs a running API and a person answering: it follows the "
    "label-request stream of a live service for ever",
}

_EXAMPLE_URL = re.compile(r"redis://127\.0\.0\.1:\d+/\d+")


def _readme_blocks() -> list[Block]:
    blocks, lines = [], README.read_text().splitlines()
    start = None
    for i, line in enumerate(lines):
        if start is None and line.strip() == "```python":
            start = i + 1
        elif start is not None and line.strip() == "```":
            blocks.append(Block(start + 1, "\n".join(lines[start:i]) + "\n"))
            start = None
    return blocks


def _reason_not_run(block: Block) -> str | None:
    return next((why for marker, why in NOT_RUN.items() if marker in block.code), None)


BLOCKS = _readme_blocks()


def test_readme_has_python_blocks_to_run() -> None:
    assert [b for b in BLOCKS if _reason_not_run(b) is None], "no runnable Python block found"


@pytest.mark.parametrize(
    "block",
    [b for b in BLOCKS if _reason_not_run(b) is not None],
    ids=lambda b: f"README.md:{b.line}",
)
def test_readme_block_that_needs_a_live_service(block: Block) -> None:
    pytest.skip(f"README.md line {block.line}: {_reason_not_run(block)}")


def test_readme_python_blocks_run(
    redis_url: str, rb: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every runnable block, in order, in one namespace, in a scratch directory."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    for block in BLOCKS:
        if _reason_not_run(block) is not None:
            continue
        code = _EXAMPLE_URL.sub(redis_url, block.code)
        try:
            with redirect_stdout(io.StringIO()):
                exec(compile(code, f"README.md:{block.line}", "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"README.md block at line {block.line} raised {exc!r}")
