"""Where numba keeps the compiled kernels: a directory that cannot go stale.

numba's ``cache=True`` checks a cached kernel only against the timestamp of the
file that defines it. A kernel inlines the helpers it calls from other modules
(every family calls :mod:`learners.kernels`), so after a helper changes, the
cached machine code of its callers would keep running the old helper. Instead,
the cache lives in a directory named by a hash of numba's version and of the
source of every module of the package that uses numba (where every kernel and
every helper a kernel calls is defined): any change to them gives a new, empty
directory, and the kernels compile afresh.

The parent is ``NUMBA_CACHE_DIR`` when the user set it, else the user cache
directory (``$XDG_CACHE_HOME/omtl/numba``, default ``~/.cache/omtl/numba``),
else, when that is not writable, a per-user directory in the temporary
directory. :func:`use_source_keyed_cache` runs when :mod:`learners` is imported,
before any kernel is defined (numba picks a kernel's cache directory then).

A full warm-up (:func:`learners.ensure_kernels`) leaves a mark in that directory
(:func:`mark_complete`): every kernel is compiled into it. A process that finds the
mark valid (:func:`is_complete`) need not load every kernel at start-up: each loads
from the cache at its first call, in milliseconds, and none compiles. The mark holds
what numba checks a cached kernel against (each compiled module's path, size and
modification time), so a checkout elsewhere or a rewritten file, whose kernels numba
would compile again, does not find it valid.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numba
import numba.core.config

__all__ = [
    "PACKAGE_ROOT",
    "cache_parent",
    "is_complete",
    "mark_complete",
    "source_hash",
    "use_source_keyed_cache",
]

#: The directory of the :mod:`learners` package.
PACKAGE_ROOT = Path(__file__).resolve().parent

# Modules that name numba without defining compiled code.
_NOT_COMPILED = frozenset({"__init__.py", "compile_cache.py"})


#: The file of a cache directory whose kernels are all compiled (:func:`mark_complete`).
COMPLETE_MARK = "complete"


def _compiled_modules(root: Path) -> list[Path]:
    """Every module under ``root`` that uses numba (see :func:`source_hash`), in order."""
    return [
        path
        for path in sorted(root.rglob("*.py"))
        if path.relative_to(root).as_posix() not in _NOT_COMPILED and b"numba" in path.read_bytes()
    ]


def _stamps(root: Path = PACKAGE_ROOT) -> str:
    """What numba checks a cached kernel against, for every compiled module: its absolute
    path (numba keeps one cache per source directory), size and modification time."""
    lines = []
    for path in _compiled_modules(root):
        stat = path.stat()
        lines.append(f"{path.resolve()} {stat.st_size} {stat.st_mtime_ns}")
    return "\n".join(lines) + "\n"


def mark_complete(directory: Path, root: Path = PACKAGE_ROOT) -> None:
    """Record in ``directory`` that every kernel of the sources under ``root`` is compiled
    into it (written atomically: a concurrent reader sees the old mark or the new one)."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{COMPLETE_MARK}.{os.getpid()}"
    tmp.write_text(_stamps(root))
    tmp.replace(directory / COMPLETE_MARK)


def is_complete(directory: Path, root: Path = PACKAGE_ROOT) -> bool:
    """Whether ``directory`` holds a valid :func:`mark_complete` for the sources under
    ``root`` as they are now."""
    try:
        return (directory / COMPLETE_MARK).read_text() == _stamps(root)
    except OSError:
        return False


def source_hash(root: Path = PACKAGE_ROOT) -> str:
    """A hash of numba's version and of every compiled module under ``root``.

    A kernel calls only compiled functions, and those live in modules that use
    numba: every ``.py`` file whose source names ``numba`` counts (its path and
    its whole source), so a change to any kernel or helper gives a new hash
    while the rest of the package can change without recompiling.
    """
    digest = hashlib.sha256(f"numba {numba.__version__}\n".encode())
    for path in _compiled_modules(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def _writable(directory: Path) -> bool:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(directory, os.W_OK | os.X_OK)


def cache_parent(user_dir: str = "") -> Path:
    """The directory that holds one cache directory per source hash."""
    if user_dir:
        return Path(user_dir).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    preferred = Path(xdg) / "omtl" / "numba"
    if _writable(preferred):
        return preferred
    return Path(tempfile.gettempdir()) / f"omtl-numba-{os.getuid()}"


def use_source_keyed_cache() -> Path:
    """Point numba's cache at ``<parent>/<source hash>``; returns that directory.

    Idempotent: the parent is the user's ``NUMBA_CACHE_DIR`` as the environment
    gave it, never a directory this function chose before.
    """
    user_dir = os.environ.get("NUMBA_CACHE_DIR", "")
    directory = cache_parent(user_dir) / source_hash()
    numba.core.config.CACHE_DIR = str(directory)  # type: ignore[attr-defined]
    return directory
