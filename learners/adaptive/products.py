"""Pairwise products of features: the ``log-quad`` input view of ``adaptive-auto``.

A linear model over ``x`` and every product ``x_i x_j`` (``i <= j``, squares
included) is a quadratic model of ``x``: VW's ``-q`` of a namespace with
itself. On a few dense numeric features whose classes are not separated by a
hyperplane (landmine's nine radar features) it makes fewer mistakes than the
linear model; on wide rows it is out of reach (``d (d + 1) / 2`` products), so
``adaptive-auto`` offers it only for narrow rows (docs/algorithms.md Sec. 11.8).

The expanded row is ``[x, products in row-major upper-triangle order, bias]``:
the bias feature, when the learner has one, stays last and takes part in no
product.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from learners.inputs import Batch, Vec, canonical_row

__all__ = ["expanded_width", "product_count", "with_products", "with_products_batch"]


def product_count(d: int) -> int:
    """Number of products ``x_i x_j`` with ``i <= j`` of ``d`` features."""
    return d * (d + 1) // 2


def expanded_width(d: int) -> int:
    """Width of a row of ``d`` features with their products appended."""
    return d + product_count(d)


@lru_cache(maxsize=16)
def _pairs(d: int) -> tuple[np.ndarray, np.ndarray]:
    """The indices ``(i, j)``, ``i <= j < d``, in row-major upper-triangle order, read-only.

    Kept per width: ``np.triu_indices`` builds a d x d mask on every call, which took
    twice as long as the product itself on a per-event call of ten features."""
    i, j = np.triu_indices(d)
    i.flags.writeable = False
    j.flags.writeable = False
    return i, j


def _expand(core: np.ndarray) -> np.ndarray:
    """``[core, core_i core_j for i <= j]`` per row of the 2-D ``core``."""
    n, d = core.shape
    i, j = _pairs(d)
    out = np.empty((n, d + i.shape[0]), dtype=core.dtype)
    out[:, :d] = core
    np.multiply(core[:, i], core[:, j], out=out[:, d:])
    return out


def with_products(v: Vec, has_bias: bool) -> Vec:
    """Row ``v`` with its products appended, in the canonical form (a zero of ``v`` zeroes
    its products: the row is then sparse); ``has_bias``: the last entry of ``v`` is the
    bias feature, kept last and left out of the products."""
    dense = v.dense()
    core, tail = (dense[:-1], dense[-1:]) if has_bias else (dense, dense[:0])
    out = np.concatenate([_expand(core[None, :])[0], tail])
    return canonical_row(out, out.shape[0])


def with_products_batch(X: np.ndarray, has_bias: bool) -> Batch:
    """Every row of the dense 2-D ``X`` as :func:`with_products` gives it, as a batch."""
    core, tail = (X[:, :-1], X[:, -1:]) if has_bias else (X, X[:, :0])
    out = np.hstack([_expand(core), tail])
    return Batch(out, None, out.shape[1])
