"""The ``omtl`` command line.

Each module in this package that defines ``register(subparsers)`` adds one or
more subcommands, and names them in a ``COMMANDS`` tuple of literals; they are
found by discovery, so adding a command means adding a module. A subcommand
sets ``func`` on its parser; ``func(args)`` returns the exit code.

Importing every command module takes seconds (through them numpy, scipy, numba
and the learners), so a command imports only its own module: :func:`main` reads
the ``COMMANDS`` of every module from its source, without importing it, and
builds the parser of the one module that owns the command asked for. Only the
top-level help, or a command that no module declares, builds the whole parser;
``omtl --version`` answers before anything (docs/architecture.md, "The command
line").
"""

from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path

from service import __version__


def command_modules() -> dict[str, str]:
    """Each subcommand's name and the name of the module of this package that adds it,
    read from the modules' ``COMMANDS`` (their source, not imported)."""
    owners: dict[str, str] = {}
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        for command in _declared_commands(Path(__path__[0]) / f"{mod.name}.py"):
            owners[command] = mod.name
    return owners


def _declared_commands(path: Path) -> tuple[str, ...]:
    """The strings of a module-level ``COMMANDS = (...)`` in the source at ``path``."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except OSError:
        return ()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "COMMANDS":
            return tuple(str(name) for name in ast.literal_eval(value))
    return ()


def build_parser(modules: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The top-level parser with the subcommands of the given modules of this package
    (by name; None: every module, found by discovery)."""
    parser = argparse.ArgumentParser(
        prog="omtl", description="Online multitask learning: learners, evaluation and the service."
    )
    parser.add_argument("-V", "--version", action="version", version=f"omtl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if modules is None:
        modules = [m.name for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)]
    for name in modules:
        module = importlib.import_module(f"{__name__}.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``omtl`` console script."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] in (["--version"], ["-V"]):
        print(f"omtl {__version__}")
        return 0
    owner = command_modules().get(args_list[0]) if args_list else None
    parser = build_parser(None if owner is None else [owner])
    args = parser.parse_args(args_list)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return int(func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
