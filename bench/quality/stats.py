"""Mean with a 95% confidence half-width, and the paired difference of two systems."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

__all__ = ["mean_ci", "paired_difference"]


def mean_ci(values: Sequence[float]) -> dict[str, float]:
    """``mean`` and ``ci95`` (``t_{0.975, R-1} * std / sqrt(R)``, ddof = 1) of per-run values."""
    v = np.asarray(values, dtype=np.float64)
    r = int(v.shape[0])
    if r == 0:
        return {"mean": math.nan, "ci95": math.nan, "runs": 0}
    mean = float(v.mean())
    half = float(stats.t.ppf(0.975, r - 1) * v.std(ddof=1) / math.sqrt(r)) if r > 1 else math.nan
    return {"mean": mean, "ci95": half, "runs": r}


def paired_difference(ours: Sequence[float], peer: Sequence[float]) -> dict[str, float]:
    """Mean and 95% CI of ``ours[r] - peer[r]`` over runs; ``excludes_zero`` when the CI does."""
    diff = np.asarray(ours, dtype=np.float64) - np.asarray(peer, dtype=np.float64)
    out = mean_ci(diff.tolist())
    lo, hi = out["mean"] - out["ci95"], out["mean"] + out["ci95"]
    out["excludes_zero"] = float(math.isfinite(out["ci95"]) and (lo > 0.0 or hi < 0.0))
    return out
