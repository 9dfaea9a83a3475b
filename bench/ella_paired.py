"""Paired comparison of ``ella`` with the other three methods, trial by trial.

Reads a document of ``bench/ella_curves.py --regenerate`` (whose per-method documents
keep every trial's final figure under ``finals``; trial ``r`` of every method ran on the
same dataset, split and task order) and prints, for each other method, the mean of
``final(ella) - final(other)`` with its 95% t-interval, how many trials ``ella`` won,
and which method was best in each trial::

    .venv/bin/python bench/ella_paired.py bench/results/ella_synthetic-ella_paper_grid_regen.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats


def paired(finals: dict[str, np.ndarray], reference: str = "ella") -> dict[str, Any]:
    """``reference - other`` per trial: mean, 95% half-width, wins; best method per trial."""
    ref = finals[reference]
    n = ref.shape[0]
    t = float(stats.t.ppf(0.975, n - 1)) if n > 1 else float("nan")
    out: dict[str, Any] = {"trials": n, "differences": {}}
    for name, values in finals.items():
        if name == reference:
            continue
        diff = ref - values
        half = t * float(diff.std(ddof=1)) / np.sqrt(n) if n > 1 else float("nan")
        out["differences"][name] = {
            "mean": float(diff.mean()),
            "ci95": half,
            "reference_better": int((diff > 0).sum()),
        }
    names = list(finals)
    best = np.argmax(np.stack([finals[k] for k in names]), axis=0)
    out["best_per_trial"] = {k: int((best == i).sum()) for i, k in enumerate(names)}
    out["median"] = {k: float(np.median(v)) for k, v in finals.items()}
    return out


def main() -> None:
    """Print the paired figures of one results file as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path", type=Path)
    args = ap.parse_args()
    docs = json.loads(args.path.read_text())["documents"]
    if not all("finals" in d for d in docs):
        raise SystemExit("no per-trial finals in this file (run ella_curves.py --regenerate)")
    finals = {d["learner"]: np.asarray(d["finals"], dtype=np.float64) for d in docs}
    print(json.dumps(paired(finals), indent=1))


if __name__ == "__main__":
    main()
