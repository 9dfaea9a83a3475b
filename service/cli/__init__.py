"""The ``omtl`` command line.

Each module in this package that defines ``register(subparsers)`` adds one or
more subcommands, and declares them in ``COMMANDS``, a dict literal of each
subcommand's name and one-line help; they are found by discovery, so adding a
command means adding a module. A subcommand sets ``func`` on its parser;
``func(args)`` returns the exit code.

Importing every command module takes seconds (through them numpy, scipy, numba
and the learners), so ``omtl`` reads the ``COMMANDS`` of every module from its
source, without importing it, and imports only the module of the command asked
for. The top-level help, and the error for an unknown command, are built from
the declarations alone; ``omtl --version`` answers before anything
(docs/architecture.md, "The command line").
"""

from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from service import __version__


def command_modules() -> dict[str, str]:
    """Each subcommand's name and the name of the module of this package that adds it,
    read from the modules' ``COMMANDS`` (their source, not imported)."""
    return {name: module for name, (module, _) in _declarations().items()}


def _declarations() -> dict[str, tuple[str, str]]:
    """Each subcommand's name, its module and its one-line help, in the order of the
    modules' names and of each module's ``COMMANDS``."""
    declared: dict[str, tuple[str, str]] = {}
    for module in _module_names():
        for name, help_text in _declared_commands(Path(__path__[0]) / f"{module}.py").items():
            declared[name] = (module, help_text)
    return declared


def _module_names() -> list[str]:
    """The modules of this package, by name in alphabetical order."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__))


def _declared_commands(path: Path) -> dict[str, str]:
    """The module-level ``COMMANDS = {...}`` literal of the source at ``path``."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except OSError:
        return {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [
            "COMMANDS"
        ]:
            return {str(k): str(v) for k, v in ast.literal_eval(node.value).items()}
    return {}


def _top_parser() -> tuple[argparse.ArgumentParser, Any]:
    """The top-level parser, and the action its subcommands are added to."""
    parser = argparse.ArgumentParser(
        prog="omtl", description="Online multitask learning: learners, evaluation and the service."
    )
    parser.add_argument("-V", "--version", action="version", version=f"omtl {__version__}")
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND")


def build_parser(modules: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The top-level parser with the subcommands of the given modules of this package
    (by name; None: every module, found by discovery)."""
    parser, sub = _top_parser()
    for name in _module_names() if modules is None else modules:
        module = importlib.import_module(f"{__name__}.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def overview_parser() -> argparse.ArgumentParser:
    """The top-level parser as far as its help and its choice of command go: every declared
    subcommand with its help and no options, nothing imported. Its help is the whole
    parser's (``tests/test_cli_ops.py``)."""
    parser, sub = _top_parser()
    for name, (_, help_text) in _declarations().items():
        sub.add_parser(name, help=help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``omtl`` console script."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] in (["--version"], ["-V"]):
        print(f"omtl {__version__}")
        return 0
    owner = command_modules().get(args_list[0]) if args_list else None
    parser = overview_parser() if owner is None else build_parser([owner])
    args = parser.parse_args(args_list)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return int(func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
