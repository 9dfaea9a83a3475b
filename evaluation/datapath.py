"""Where the benchmark data lives: the ``OMTL_DATA`` setting.

``OMTL_DATA`` defaults to ``../shared/data``. A relative path is resolved
against the current directory first and, failing that, against the repository
root, so ``omtl evaluate landmine ...`` works from the repository and from its
parent alike. Data is never copied into the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_DATA", "DataNotFoundError", "data_root", "data_file"]

DEFAULT_DATA = "../shared/data"
REPO_ROOT = Path(__file__).resolve().parents[1]


class DataNotFoundError(FileNotFoundError):
    """The data directory or a dataset file is missing."""


def data_root() -> Path:
    """The data directory named by ``OMTL_DATA`` (see the module docstring)."""
    setting = os.environ.get("OMTL_DATA", DEFAULT_DATA)
    path = Path(setting).expanduser()
    candidates = [path] if path.is_absolute() else [Path.cwd() / path, REPO_ROOT / path]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    tried = ", ".join(str(c) for c in candidates)
    raise DataNotFoundError(
        f"benchmark data directory not found (OMTL_DATA={setting!r}; tried {tried}). "
        "Set OMTL_DATA to the folder holding landmine/, school/, tdt2_top20/, ..."
    )


def data_file(*parts: str) -> Path:
    """A file under the data directory; raises :class:`DataNotFoundError` when absent."""
    path = data_root().joinpath(*parts)
    if not path.exists():
        raise DataNotFoundError(
            f"dataset file {path} is missing; check OMTL_DATA (now {data_root()})"
        )
    return path
