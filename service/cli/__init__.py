"""The ``omtl`` command line.

Each module in this package that defines ``register(subparsers)`` adds one or
more subcommands; they are found by discovery, so adding a command means adding
a module. A subcommand sets ``func`` on its parser; ``func(args)`` returns the
exit code.

Building the parser imports every command module (and through them numpy,
scipy and the learners, seconds of start-up), so ``omtl --version`` answers
before any of that is imported (docs/architecture.md, "The command line").
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from service import __version__


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every discovered subcommand."""
    parser = argparse.ArgumentParser(
        prog="omtl", description="Online multitask learning: learners, evaluation and the service."
    )
    parser.add_argument("-V", "--version", action="version", version=f"omtl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{mod.name}")
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
    parser = build_parser()
    args = parser.parse_args(args_list)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return int(func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
