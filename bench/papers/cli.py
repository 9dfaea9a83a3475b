"""Running the ``omtl`` command line from a benchmark, exactly as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: The ``omtl`` console script of the running interpreter's environment.
OMTL = str(Path(sys.executable).parent / "omtl")


def omtl_json(args: list[str]) -> Any:
    """Run ``omtl ARGS --json FILE`` (output discarded) and return the document it wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "doc.json"
        subprocess.run([OMTL, *args, "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())


def shown(args: list[str]) -> str:
    """The command line as a user would type it (without ``--json FILE``)."""
    return " ".join(["omtl", *args])
