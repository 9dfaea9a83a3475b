"""Several learners on the same dataset, protocol and shuffles (``omtl compare``).

The shuffles and splits of run ``r`` depend only on ``(seed, r)``
(:func:`evaluation.common.run_rng`), so evaluating each learner with the
same seed gives every learner exactly the same data orders.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evaluation import protocols
from evaluation.dataset import Dataset

__all__ = ["compare", "plot_curves", "split_params"]


def split_params(params: dict[str, Any], names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per-learner parameters from ``key=value`` and ``LEARNER.key=value`` entries.

    A scoped key (``cmtl.b``) goes to that learner only; an unscoped key goes to
    every learner declaring that parameter, and is an error when none does.
    """
    import learners

    declared = {n: {p.name for p in learners.get(n).params} for n in names}
    out: dict[str, dict[str, Any]] = {n: {} for n in names}
    for key, value in params.items():
        scope, dot, rest = key.partition(".")
        if dot and scope in out:
            out[scope][rest] = value
            continue
        takers = [n for n in names if key in declared[n]]
        if not takers:
            raise ValueError(f"no learner among {', '.join(names)} has a parameter {key!r}")
        for n in takers:
            out[n][key] = value
    return out


def compare(
    dataset: Dataset,
    names: Sequence[str],
    params: dict[str, Any],
    *,
    protocol: str,
    runs: int,
    seed: int,
    budget: int | None,
    progress: Callable[[str], Callable[[int, int], None] | None] | None = None,
) -> list[dict[str, Any]]:
    """One protocol document per learner, all with the same seed (hence shuffles).

    ``progress(name)`` may return a progress callback for that learner's run.
    """
    proto = protocols.get(protocol)
    per_learner = split_params(params, names)
    docs = []
    for name in names:
        report = progress(name) if progress is not None else None
        docs.append(
            proto.run(
                dataset,
                name,
                per_learner[name],
                runs=runs,
                seed=seed,
                budget=budget,
                progress=report,
            )
        )
    return docs


def plot_curves(docs: Sequence[dict[str, Any]], path: str | Path) -> None:
    """Draw every document's ``curve`` (x = its first key, y = its second) into ``path``.

    With the ``split`` protocol that is accuracy against queries (xu2018 Fig. 1);
    with ``online`` the cumulative mistake rate over the stream. Needs matplotlib
    (the optional ``bench`` extra).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - depends on the installation
        raise RuntimeError("--plot needs matplotlib: pip install 'omtl[bench]'") from None
    curves = [(d["learner"], d.get("curve")) for d in docs]
    if not all(c for _, c in curves):
        raise ValueError(f"protocol {docs[0]['protocol']!r} reports no curve to plot")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    x_key = y_key = ""
    for name, curve in curves:
        assert curve is not None
        x_key, y_key = list(curve)[:2]
        ax.plot(curve[x_key], curve[y_key], marker="o", markersize=3, label=name)
    labels = {
        "rounds": "rounds of the stream",
        "queries_mean": "labels queried (mean over runs)",
        "mistake_rate_mean": "cumulative mistake rate",
        "accuracy_mean": "test accuracy",
        "rmse_mean": "RMSE",
    }
    ax.set_xlabel(labels.get(x_key, x_key))
    ax.set_ylabel(labels.get(y_key, y_key))
    ax.set_title(f"{docs[0]['dataset']} ({docs[0]['protocol']}, {docs[0]['runs']} runs)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
