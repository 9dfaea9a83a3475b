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
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numba
import numba.core.config

__all__ = ["PACKAGE_ROOT", "cache_parent", "source_hash", "use_source_keyed_cache"]

#: The directory of the :mod:`learners` package.
PACKAGE_ROOT = Path(__file__).resolve().parent

# Modules that name numba without defining compiled code.
_NOT_COMPILED = frozenset({"__init__.py", "compile_cache.py"})


def source_hash(root: Path = PACKAGE_ROOT) -> str:
    """A hash of numba's version and of every compiled module under ``root``.

    A kernel calls only compiled functions, and those live in modules that use
    numba: every ``.py`` file whose source names ``numba`` counts (its path and
    its whole source), so a change to any kernel or helper gives a new hash
    while the rest of the package can change without recompiling.
    """
    digest = hashlib.sha256(f"numba {numba.__version__}\n".encode())
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        source = path.read_bytes()
        if b"numba" in source and name not in _NOT_COMPILED:
            digest.update(name.encode() + b"\0")
            digest.update(source + b"\0")
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
