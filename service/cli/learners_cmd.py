"""``omtl learners``: list the registered learners as a table or as JSON."""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

import learners

#: The subcommands :func:`register` adds and their one-line help (read from this source by
#: :mod:`service.cli`, which imports only the module of the command run).
COMMANDS = {
    "learners": "list the available learners",
}


def register(sub: Any) -> None:
    """Add the ``learners`` subcommand."""
    p = sub.add_parser("learners", help=COMMANDS["learners"])
    p.add_argument("--json", action="store_true", help="print a JSON list of LearnerInfo entries")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the registry."""
    infos = learners.available()
    if args.json:
        print(json.dumps([i.as_dict() for i in infos], indent=2))
        return 0
    width = max(len(i.name) for i in infos)
    print(f"{'name':<{width}}  {'kind':<14}  {'active':<6}  summary")
    for info in infos:
        print(
            f"{info.name:<{width}}  {info.kind:<14}  {'yes' if info.active else 'no':<6}  {info.summary}"
        )
        params = ", ".join(
            f"{p.name}={p.default!r}" for p in info.params if not hasattr(p.default, "shape")
        )
        if params:
            print(
                textwrap.indent(textwrap.fill(f"params: {params}", 100 - width), " " * (width + 2))
            )
    return 0
