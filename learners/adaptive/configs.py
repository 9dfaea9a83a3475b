"""The configurations an adaptive learner runs: one per member, a grid for ``adaptive``.

A configuration is ``(loss, eta, b, r)``: the loss (``logistic``, ``hinge``, or
``arow`` for the diagonal AROW update), the step size ``eta`` of the shared
part, the coupling ``b`` (the per-task part steps ``b`` times as far as the
shared part, or for AROW starts with ``b`` times its variance: ``b = 0`` is one
pooled model, large ``b`` nearly independent per-task models; docs/algorithms.md
Sec. 11.1), and AROW's regulariser ``r`` (unused by the other losses).
:class:`Configs` holds them as the parallel arrays the kernel reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from learners.adaptive.steps import AROW, LOSS_CODES

__all__ = ["Configs", "loss_list", "positive_list", "non_negative_list"]


@dataclass(frozen=True)
class Configs:
    """Parallel arrays, one entry per configuration (see the module docstring)."""

    losses: np.ndarray
    etas: np.ndarray
    couplings: np.ndarray
    ridges: np.ndarray
    #: zhang2018's group-lasso weight of the outlier part per configuration (0: no outlier
    #: part; docs/algorithms.md Sec. 11.7).
    outlier_gammas: np.ndarray

    @property
    def size(self) -> int:
        """Number of configurations ``M``."""
        return int(self.losses.shape[0])

    @classmethod
    def single(cls, loss: str, eta: float, b: float, r: float, gamma: float = 0.0) -> Configs:
        """One configuration (``gamma > 0``: with an outlier part, first-order losses only)."""
        return cls.grid([loss], [eta], [b], r, gamma)

    def subset(self, index: np.ndarray) -> Configs:
        """The configurations ``index`` (grid indices or a mask), in that order."""
        return Configs(
            self.losses[index],
            self.etas[index],
            self.couplings[index],
            self.ridges[index],
            self.outlier_gammas[index],
        )

    @property
    def has_outliers(self) -> bool:
        """Whether any configuration has an outlier part."""
        return bool(np.any(self.outlier_gammas > 0.0))

    @classmethod
    def grid(
        cls,
        losses: list[str],
        etas: list[float],
        couplings: list[float],
        r: float,
        gamma: float = 0.0,
        arow_couplings: list[float] | None = None,
    ) -> Configs:
        """Every (loss, eta, b) of the grid, in this order; AROW ignores eta, so it gets one
        configuration per b, of ``arow_couplings`` when given (else of ``couplings``)."""
        rows: list[tuple[int, float, float]] = []
        for loss in losses:
            code = LOSS_CODES[loss]
            per_loss = arow_couplings if code == AROW and arow_couplings is not None else couplings
            for b in per_loss:
                rows.extend((code, e, b) for e in ([1.0] if code == AROW else etas))
        return cls(
            np.array([c for c, _, _ in rows], dtype=np.int64),
            np.array([e for _, e, _ in rows], dtype=np.float64),
            np.array([b for _, _, b in rows], dtype=np.float64),
            np.full(len(rows), float(r)),
            np.array([0.0 if c == AROW else float(gamma) for c, _, _ in rows]),
        )

    def describe(self, m: int) -> str:
        """A readable name of configuration ``m``, e.g. ``logistic eta=0.5 b=1``."""
        loss = next(k for k, v in LOSS_CODES.items() if v == int(self.losses[m]))
        if int(self.losses[m]) == AROW:
            return f"arow r={self.ridges[m]:g} b={self.couplings[m]:g}"
        return f"{loss} eta={self.etas[m]:g} b={self.couplings[m]:g}"

    def initial_variances(self) -> tuple[np.ndarray, np.ndarray]:
        """Start values of the accumulators: 0 (AdaGrad sums), or AROW's prior variances
        1 (shared part) and b (per-task part). Returns (shared, per-task), shape (M,)."""
        arow = self.losses == AROW
        return np.where(arow, 1.0, 0.0), np.where(arow, self.couplings, 0.0)


def _split(v: Any) -> list[str]:
    if isinstance(v, str):
        parts = [p.strip() for p in v.split(",")]
    elif isinstance(v, list | tuple):
        parts = [str(p).strip() for p in v]
    else:
        raise ValueError(f"must be a comma-separated list, got {v!r}")
    if not parts or any(not p for p in parts):
        raise ValueError(f"must be a non-empty comma-separated list, got {v!r}")
    return parts


def loss_list(v: Any) -> str:
    """Comma-separated loss names among logistic, hinge, arow (returned normalised)."""
    parts = _split(v)
    bad = [p for p in parts if p not in LOSS_CODES]
    if bad:
        raise ValueError(f"unknown loss(es) {', '.join(bad)}; known: {', '.join(LOSS_CODES)}")
    return ",".join(parts)


def _number_list(v: Any, minimum: float, strict: bool) -> str:
    values = [float(p) for p in _split(v)]
    for f in values:
        if not np.isfinite(f) or f < minimum or (strict and f == minimum):
            raise ValueError(f"every value must be {'>' if strict else '>='} {minimum:g}: {v!r}")
    return ",".join(repr(f) for f in values)


def positive_list(v: Any) -> str:
    """Comma-separated finite numbers > 0."""
    return _number_list(v, 0.0, True)


def non_negative_list(v: Any) -> str:
    """Comma-separated finite numbers >= 0."""
    return _number_list(v, 0.0, False)
