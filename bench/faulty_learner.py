"""A learner that fails on purpose, for the tests and the benchmark of what the worker
does then (``tests/service/test_learner_failures.py``, :mod:`bench.perf.learner_failures`).

:func:`make_faulty` changes a registered learner class so that a row whose first
feature is :data:`MAGIC` makes its learning calls raise ``RuntimeError`` after
learning the rows before it in the call: the state then holds part of the call,
as a learner's bug half-way through a batch would leave it. Every other row is
learned as before, so a log without such rows gives the real learner's state.
With ``refuse=True`` the calls instead refuse such a row with ``ValueError``
before any change, as a learner refuses input it cannot take.

``python -m bench.faulty_learner LEARNER [worker arguments]`` runs a
worker process (``python -m service.worker``) with ``LEARNER`` made faulty: the
tests kill it with SIGKILL.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import learners

#: A row whose first feature has this value (exact in float32) makes the learner fail.
MAGIC = 1234.5


class FaultyRow(RuntimeError):
    """What the faulty learner raises."""


def _first_magic(X: Any) -> int | None:
    """Index of the first row of ``X`` (dense, one or two dimensions) starting with
    :data:`MAGIC`, or None (other forms of rows are never faulty)."""
    if not isinstance(X, np.ndarray) or X.ndim not in (1, 2) or X.shape[-1] == 0:
        return None
    first = X[:, 0] if X.ndim == 2 else X[:1]
    found = np.flatnonzero(first == MAGIC)
    return int(found[0]) if found.size else None


def make_faulty(name: str, setattr_: Any = setattr, refuse: bool = False) -> None:
    """Make the learner ``name``'s ``score_and_learn_many`` and ``score_and_learn_one``
    fail on a row starting with :data:`MAGIC`, or refuse it (``refuse``; see the module
    docstring). ``setattr_`` sets the methods (pytest's ``monkeypatch.setattr``, which
    undoes it after the test)."""
    # the class a model builds (a registered class may build a subclass of its own)
    cls = type(learners.make(name, n_features=1, n_tasks=1))
    many, one = cls.score_and_learn_many, cls.score_and_learn_one

    def score_and_learn_many(self: Any, X: Any, y: Any, task: Any) -> np.ndarray:
        bad = _first_magic(X)
        if bad is None:
            return many(self, X, y, task)
        if refuse:
            raise ValueError(f"row {bad} starts with {MAGIC}")
        if bad > 0:  # the rows before it are learned: the call fails half-way
            many(self, X[:bad], np.asarray(y)[:bad], np.asarray(task)[:bad])
        raise FaultyRow(f"the faulty learner fails on row {bad} of a batch")

    def score_and_learn_one(self: Any, x: Any, y: float, task: int) -> float:
        if _first_magic(x) is not None:
            if refuse:
                raise ValueError(f"the row starts with {MAGIC}")
            raise FaultyRow("the faulty learner fails on this event")
        return one(self, x, y, task)

    setattr_(cls, "score_and_learn_many", score_and_learn_many)
    setattr_(cls, "score_and_learn_one", score_and_learn_one)


if __name__ == "__main__":
    from service.worker.__main__ import main

    make_faulty(sys.argv[1])
    sys.exit(main(sys.argv[2:]))
