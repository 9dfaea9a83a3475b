"""zhang2018 Table I: its rows and grids, the paper's figures, the data instances and replays.

Selection protocol: every grid point is run with the ``online`` protocol on a
*tuning instance* of ``synthetic-rom`` (dataset ``seed=1``: its own random walk of
task vectors and its own points), ``TUNE_RUNS`` shuffles with ``--seed 1``; the
point with the lowest overall cumulative error rate (all five tasks pooled) is
kept. The reported table then uses the *reporting instance* (dataset ``seed=0``)
with 10 fresh shuffles (``--seed 0``), so no reported number was seen while
tuning. Selection is by the overall error only, never by per-task figures or by
which tasks get flagged as outliers. Grids follow zhang2018 Sec. IV-A (decades;
eta up to 1e-1, kappa in 1e-3..1e3), thinned to keep the run time near 20 minutes.

:data:`PAPER_TABLE` holds zhang2018 Table I (cumulative error rate (%) on the
synthetic dataset, mean +- std, Tasks 1-5 per row). For delta^2 = 1.00 and 12.25
the paper reports two COML rows (COML-1, COML-2) without saying what separates them.

:func:`replay` re-runs the online protocol of ``omtl evaluate`` (same orders and
learner seeds) keeping what the command does not report: every run's final
outlier flags and scores.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluation.catalog import load_dataset
from evaluation.common import LearnerSetup, RowSource, learner_seed, run_rng, stream_pass

__all__ = [
    "DELTA2",
    "PAPER_TABLE",
    "ROWS",
    "TUNE_DATA_SEED",
    "TUNE_SEED",
    "Replay",
    "Row",
    "candidates",
    "dataset",
    "flag_counts",
    "grid",
    "replay",
    "spec",
]

#: The three settings of the outlier task's distance (zhang2018 Sec. IV-B).
DELTA2 = (0.09, 1.00, 12.25)
TUNE_DATA_SEED = 1
TUNE_SEED = 1


@dataclass(frozen=True)
class Row:
    """One row of the table: a label, the paper's row, and the candidate (learner, grid) pairs.

    Rows with several learners (OMTL-B) keep the best learner, as the paper does.
    """

    label: str
    paper: tuple[str, ...]
    candidates: tuple[tuple[str, dict[str, tuple[Any, ...]]], ...]


def grid(axes: dict[str, tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Every combination of the axes (one empty dict for no axes)."""
    keys = sorted(axes)
    return [dict(zip(keys, values)) for values in itertools.product(*(axes[k] for k in keys))]


DECADES = (1e-6, 1e-2, 1.0, 1e2)

ROWS: tuple[Row, ...] = (
    Row("PT-Individual (ipl)", ("PT-Individual",), (("ipl", {}),)),
    Row(
        "PA-Individual (pa-individual, PA-I)",
        ("PA-Individual",),
        (("pa-individual", {"variant": ("pa1",), "C": (1e-3, 1e-2, 1e-1, 1.0, 10.0)}),),
    ),
    Row(
        "Multi-P (cmtl, b in 0..K)",
        ("Multi-P",),
        (("cmtl", {"b": (0.0, 1.0, 2.0, 3.0, 4.0, 5.0)}),),
    ),
    Row(
        "OMTL-B (best of omtl-cov, omtl-logdet, omtl-vonneumann)",
        ("OMTL-B",),
        (
            ("omtl-cov", {}),
            ("omtl-logdet", {"eta": (1e-3, 1e-2, 1e-1, 1.0, 10.0)}),
            ("omtl-vonneumann", {"eta": (1e-3, 1e-2, 1e-1, 1.0, 10.0)}),
        ),
    ),
    Row(
        "COML [R] (coml)",
        ("COML", "COML-1", "COML-2"),
        (("coml", {"C": (1e-3, 1e-2, 1e-1, 1.0), "nu": (1e-2, 1e-1, 1.0, 10.0, 100.0)}),),
    ),
    Row(
        "ROM-PGD (rom-pgd)",
        ("ROM-PGD",),
        (
            (
                "rom-pgd",
                {
                    "eta": (1e-3, 1e-2, 1e-1),
                    "alpha": DECADES,
                    "beta": DECADES,
                    "gamma": (1e-1, 1.0, 3.0, 10.0, 30.0, 1e2, 1e3),
                },
            ),
        ),
    ),
    Row(
        "ROM-RDA (rom-rda)",
        ("ROM-RDA",),
        (
            (
                "rom-rda",
                {
                    "kappa": (1.0, 10.0, 1e2, 1e3),
                    "alpha": DECADES,
                    "beta": DECADES,
                    "gamma": (1e-3, 1e-2, 1e-1, 1.0, 10.0),
                },
            ),
        ),
    ),
)


def candidates(rows: Iterable[Row]) -> list[tuple[str, dict[str, Any]]]:
    """Every (learner, params) point of the given rows."""
    return [(name, p) for row in rows for name, axes in row.candidates for p in grid(axes)]


#: One row of the paper: (mean, std) for Tasks 1-5.
PaperRow = tuple[tuple[float, float], ...]

PAPER_TABLE: dict[float, dict[str, PaperRow]] = {
    0.09: {
        "PT-Individual": (
            (14.10, 0.11),
            (13.99, 0.17),
            (13.95, 0.17),
            (13.70, 0.13),
            (13.88, 0.14),
        ),
        "PA-Individual": (
            (13.79, 0.06),
            (13.14, 0.07),
            (12.40, 0.04),
            (12.72, 0.03),
            (12.21, 0.06),
        ),
        "Multi-P": ((13.41, 0.21), (12.99, 0.17), (12.96, 0.19), (13.10, 0.31), (13.58, 0.22)),
        "OMTL-B": ((10.35, 0.34), (10.06, 0.30), (10.20, 0.21), (11.51, 0.35), (11.51, 0.22)),
        "COML": ((7.88, 0.12), (7.41, 0.10), (7.71, 0.17), (7.43, 0.13), (7.59, 0.15)),
        "ROM-PGD": ((7.89, 0.11), (7.20, 0.13), (7.72, 0.11), (7.12, 0.12), (6.75, 0.17)),
        "ROM-RDA": ((7.93, 0.14), (7.81, 0.12), (7.96, 0.10), (7.35, 0.11), (7.15, 0.13)),
    },
    1.00: {
        "PT-Individual": (
            (13.90, 0.14),
            (14.03, 0.15),
            (13.93, 0.14),
            (13.76, 0.14),
            (13.70, 0.17),
        ),
        "PA-Individual": (
            (12.67, 0.03),
            (12.28, 0.04),
            (12.42, 0.06),
            (12.89, 0.04),
            (12.49, 0.07),
        ),
        "Multi-P": ((13.95, 0.21), (14.03, 0.27), (13.93, 0.21), (13.77, 0.30), (13.71, 0.22)),
        "OMTL-B": ((12.05, 0.33), (12.16, 0.34), (12.01, 0.34), (12.31, 0.21), (13.96, 0.37)),
        "COML-1": ((11.18, 0.12), (10.91, 0.12), (10.96, 0.11), (11.75, 0.14), (12.89, 0.22)),
        "COML-2": ((8.40, 0.12), (8.81, 0.14), (8.35, 0.15), (8.38, 0.15), (20.48, 0.15)),
        "ROM-PGD": ((10.12, 0.11), (9.72, 0.11), (10.10, 0.14), (10.40, 0.11), (11.61, 0.14)),
        "ROM-RDA": ((10.36, 0.17), (10.06, 0.21), (10.21, 0.22), (10.51, 0.18), (11.52, 0.19)),
    },
    12.25: {
        "PT-Individual": (
            (14.24, 0.14),
            (14.00, 0.13),
            (14.19, 0.13),
            (13.93, 0.14),
            (13.80, 0.17),
        ),
        "PA-Individual": (
            (12.41, 0.05),
            (12.66, 0.07),
            (12.27, 0.06),
            (13.10, 0.07),
            (12.99, 0.07),
        ),
        "Multi-P": ((13.82, 0.24), (14.15, 0.22), (14.14, 0.22), (14.03, 0.22), (14.10, 0.34)),
        "OMTL-B": ((13.82, 0.30), (13.85, 0.34), (14.01, 0.24), (13.93, 0.27), (17.80, 0.51)),
        "COML-1": ((12.94, 0.12), (12.15, 0.11), (12.14, 0.14), (12.89, 0.12), (13.80, 0.11)),
        "COML-2": ((11.46, 0.22), (10.62, 0.22), (10.42, 0.20), (11.55, 0.17), (40.26, 0.51)),
        "ROM-PGD": ((10.64, 0.12), (10.13, 0.12), (10.16, 0.12), (10.10, 0.14), (13.61, 0.11)),
        "ROM-RDA": ((12.06, 0.27), (12.16, 0.18), (12.06, 0.26), (12.30, 0.22), (13.96, 0.19)),
    },
}


_DATA: dict[str, Any] = {}


def spec(delta2: float, data_seed: int | None = None) -> str:
    """The dataset spec of ``synthetic-rom`` for one delta^2 (reporting instance by default)."""
    base = f"synthetic-rom:delta2={delta2:g}"
    return base if data_seed is None else f"{base},seed={data_seed}"


def dataset(name: str) -> Any:
    """Load (once per process) the dataset ``name``."""
    if name not in _DATA:
        _DATA[name] = load_dataset(name)
    return _DATA[name]


def flag_counts(flag_sets: list[list[int]], n_tasks: int = 5) -> list[int]:
    """In how many of the runs each task ended flagged."""
    counts = np.zeros(n_tasks, dtype=int)
    for flagged in flag_sets:
        counts[flagged] += 1
    return [int(c) for c in counts]


@dataclass
class Replay:
    """Flags, outlier scores and errors of ``runs`` online-protocol runs of one learner."""

    flag_sets: list[list[int]] = field(default_factory=list)
    scores: list[list[float]] = field(default_factory=list)
    overall_error: list[float] = field(default_factory=list)
    task_error: list[list[float]] = field(default_factory=list)

    def flag_counts(self, n_tasks: int) -> list[int]:
        """In how many runs each task ended flagged."""
        return flag_counts(self.flag_sets, n_tasks)


def replay(
    delta2: float,
    learner: str,
    params: dict[str, Any],
    *,
    data_seed: int | None,
    seed: int,
    runs: int,
) -> Replay:
    """The runs of ``omtl evaluate --protocol online --seed SEED`` (same orders and learner
    seeds), keeping each run's final ``outlier_tasks()`` and ``outlier_scores()``."""
    data = dataset(spec(delta2, data_seed))
    setup = LearnerSetup.create(data, learner, params, budget=None)
    rows = RowSource(data)
    out = Replay()
    for r in range(runs):
        order = run_rng(seed, r).permutation(data.n)
        model = setup.build(seed=learner_seed(seed, r), rounds=data.n)
        result = stream_pass(model, rows, order)
        wrong = np.where(result.scores >= 0.0, 1.0, -1.0) != data.y[order]
        task = data.task[order]
        out.flag_sets.append(list(model.outlier_tasks()))  # type: ignore[attr-defined]
        out.scores.append([float(v) for v in model.outlier_scores()])  # type: ignore[attr-defined]
        out.overall_error.append(float(wrong.mean()))
        out.task_error.append([float(wrong[task == k].mean()) for k in range(data.n_tasks)])
    return out
