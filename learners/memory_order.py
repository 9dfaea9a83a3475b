"""Which memory order a learner's per-feature state takes: by row or by feature.

Learners that keep several values per feature (the adaptive learners' weights and
accumulators of every configuration, docs/algorithms.md Sec. 11.4; ``rom-pgd``'s
individual and outlier parts, Sec. 5.2; ``coml``'s task vectors, Sec. 5.6) can lay them
out two ways:

* **by row** (C order): each vector of the state is contiguous, so the loops over a
  dense row run along memory and vectorise;
* **by feature** (interleaved): the values of one feature lie side by side, so a
  sparse row reads one or a few cache lines per non-zero instead of one per vector.
  On a wide model, whose state is far larger than the caches, those reads are the
  cost of a row.

:func:`interleave_for` chooses from a learner's ``memory_order`` parameter: by feature
(``features``), by row (``rows``), or with ``auto`` (the default) by feature for rows of
at least :data:`INTERLEAVE_MIN_FEATURES` entries (bias included), the width from which
rows are sparse in practice (text, hashed features); a model of wide dense rows
(embeddings) wants ``rows``. The choice depends on the width and the parameter only, so
a learner restored from its state, or replayed, runs the same loops as the one that
was saved.
"""

from __future__ import annotations

from learners.base import Param
from learners.params import one_of

__all__ = ["INTERLEAVE_MIN_FEATURES", "MEMORY_ORDERS", "interleave_for", "memory_order_param"]

#: Rows at least this wide (D, the bias included) get the order by feature.
INTERLEAVE_MIN_FEATURES = 16_384

#: The values of the learners' ``memory_order`` parameter.
MEMORY_ORDERS = ("auto", "rows", "features")


def interleave_for(dim: int, memory_order: str = "auto") -> bool:
    """Whether a learner on rows of ``dim`` entries (bias included) lays its state out by
    feature: with ``memory_order`` ``"features"``, never with ``"rows"``, and with
    ``"auto"`` from :data:`INTERLEAVE_MIN_FEATURES` entries on."""
    if memory_order != "auto":
        return memory_order == "features"
    return dim >= INTERLEAVE_MIN_FEATURES


def memory_order_param(layouts: str, results: str) -> Param:
    """A learner's ``memory_order`` parameter (default ``auto``, one of
    :data:`MEMORY_ORDERS`). ``layouts`` says what lies where by row and by feature (``"How
    ... lie in memory: 'rows' (...), 'features' (...)"``), ``results`` how the two orders'
    numbers compare; the help adds what ``auto`` chooses."""
    return Param(
        "memory_order",
        "auto",
        f"{layouts}, or 'auto' ('features' for rows of at least {INTERLEAVE_MIN_FEATURES} "
        f"entries, bias included). {results}",
        one_of(*MEMORY_ORDERS),
    )
