"""Uniform draws taken ahead of a compiled loop, with the generator kept exact.

An active learner draws its query decisions from its own seeded generator
(``Learner.rng``), one ``rng.random()`` per Bernoulli trial, and the generator
state is part of its ``state_dict``. A compiled pass over a batch cannot call
the generator, and how many trials it makes depends on the data (a PEER round
makes a second trial only after the first succeeds; no trial is made once the
query budget is spent). :class:`Uniforms` therefore draws an upper bound of
uniforms in one call, lets the kernel consume a prefix of them in order, and
then puts the generator where the row-by-row path would have left it: the
saved state, advanced by exactly the number of uniforms used
(:meth:`Uniforms.commit`). ``Generator.random(n)`` yields the same numbers as
n calls of ``Generator.random()``, so the kernel sees the reference's draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["Uniforms", "draw_below"]


class Uniforms:
    """``count`` uniforms in [0, 1) drawn ahead from ``rng`` (see the module docstring).

    Parameters
    ----------
    rng : numpy.random.Generator
        The learner's generator.
    count : int
        An upper bound of the draws the pass will make.
    exact : bool
        True when the pass is known to make exactly ``count`` draws: then the
        generator is already in its final state and :meth:`commit` only checks.
    """

    __slots__ = ("_exact", "_rng", "_saved", "values")

    def __init__(self, rng: np.random.Generator, count: int, *, exact: bool = False) -> None:
        self._rng = rng
        self._exact = exact
        self._saved: Mapping[str, Any] | None = None if exact else rng.bit_generator.state
        self.values = rng.random(count)

    def commit(self, used: int) -> None:
        """Leave the generator as if exactly ``used`` uniforms had been drawn one by one."""
        count = self.values.shape[0]
        if not 0 <= used <= count:
            raise ValueError(f"used {used} of {count} uniforms drawn ahead")
        if self._exact or used == count:
            if self._exact and used != count:
                raise ValueError(f"an exact pass used {used} of its {count} uniforms")
            return
        assert self._saved is not None
        self._rng.bit_generator.state = self._saved
        if used:
            self._rng.random(used)


def draw_below(rng: np.random.Generator, p: np.ndarray, remaining: int) -> np.ndarray:
    """One Bernoulli trial per row, ``rng.random() < p[i]`` in row order, while queries
    remain: ``remaining`` more True answers at most (no draw once they are spent, as
    :meth:`learners.base.Learner.query_one` does not draw once the budget is spent).
    Returns the answers; the generator is left where the row-by-row trials leave it
    (:class:`Uniforms`). A NaN probability answers False, as ``u < nan`` does."""
    n = p.shape[0]
    asked = np.zeros(n, dtype=np.bool_)
    if n == 0 or remaining <= 0:
        return asked
    uniforms = Uniforms(rng, n, exact=remaining >= n)
    np.less(uniforms.values, p, out=asked)
    used = n
    if remaining < n:
        # the trial that spends the last query is the last one drawn
        spent = np.flatnonzero(np.cumsum(asked) >= remaining)
        if spent.shape[0]:
            used = int(spent[0]) + 1
            asked[used:] = False
    uniforms.commit(used)
    return asked
