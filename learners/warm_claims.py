"""Share the families' kernel warm-ups among processes started side by side.

``make warm`` compiles the kernels into an empty cache with one process per core
(:func:`learners.kernels.warm_kernels` with a ``claims`` directory). Each process takes
the families no other has claimed. A family whose kernels call the compiled functions
of another family's module (the passes of the active rules call the adaptive learners'
row steps; a family's per-event entries call its batch passes) needs that family's
machine code: numba loads it from the cache where it is there, and otherwise compiles
it in the calling process too, the same work done twice while the first process is
still at it. On a 2-core host that second compile was 93 of the 474 CPU s of
``make warm``, about a fifth. So a process takes the first family, in registration
order, whose dependencies are done (:func:`dependencies`: the modules of the compiled functions
its module imports), waits for one while only families with dependencies in progress
remain, and marks each family done when its warm-up returns.

The files of ``claims``: ``<family>`` (claimed, created atomically) and
``<family>.done``. A process that waits longer than :data:`WAIT_LIMIT_S` for a family's
dependencies (the process compiling them died) goes ahead and compiles them itself.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

__all__ = ["WAIT_LIMIT_S", "claimed_warmups", "dependencies", "family_name"]

#: Seconds a process waits for the dependencies of the families left before it
#: compiles one anyway (a family takes up to about 100 s on a slow two-core machine).
WAIT_LIMIT_S = 600.0

#: Seconds between two looks at the claims directory while waiting.
_POLL_S = 0.05

Warmup = Callable[[], object]


def family_name(fn: Warmup) -> str:
    """The name of a family's warm-up: its module and qualified name."""
    return f"{fn.__module__}.{fn.__qualname__}"


def dependencies(fns: Sequence[Warmup]) -> dict[str, set[str]]:
    """For each warm-up, the warm-ups of the other modules whose compiled functions
    (numba dispatchers, recognised by their ``py_func``) its module imports."""
    by_module: dict[str, list[str]] = {}
    for fn in fns:
        by_module.setdefault(fn.__module__, []).append(family_name(fn))
    needs: dict[str, set[str]] = {}
    for fn in fns:
        module = sys.modules[fn.__module__]
        sources = {
            py_func.__module__
            for value in vars(module).values()
            if (py_func := getattr(value, "py_func", None)) is not None
        }
        sources.discard(fn.__module__)
        needs[family_name(fn)] = {name for m in sources for name in by_module.get(m, [])}
    return needs


def claimed_warmups(
    fns: Sequence[Warmup],
    claims: Path,
    wait_limit_s: float = WAIT_LIMIT_S,
    needs: dict[str, set[str]] | None = None,
) -> Iterator[Warmup]:
    """The warm-ups this process runs, in order; each is marked done when the caller
    asks for the next one (so the caller runs it before iterating on). Stops when every
    family is claimed by some process. ``needs``: the families each one waits for, by
    name (:func:`dependencies` of ``fns`` when None)."""
    claims.mkdir(parents=True, exist_ok=True)
    if needs is None:
        needs = dependencies(fns)
    pending = list(fns)
    waited_since: float | None = None
    while pending:
        pending = [fn for fn in pending if not (claims / family_name(fn)).exists()]
        ready = [fn for fn in pending if _done(claims, needs.get(family_name(fn), set()))]
        if not ready and pending:
            waited_since = waited_since or time.monotonic()
            if time.monotonic() - waited_since < wait_limit_s:
                time.sleep(_POLL_S)
                continue
            ready = pending[:1]
        waited_since = None
        for fn in ready:
            name = family_name(fn)
            if _claim(claims / name):
                yield fn
                (claims / f"{name}.done").touch()
                break


def _done(claims: Path, names: set[str]) -> bool:
    return all((claims / f"{name}.done").exists() for name in names)


def _claim(path: Path) -> bool:
    """Create ``path`` unless it exists; whether this call created it (atomic)."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True
