"""Dataset names: ``NAME[:key=value,...]`` for the built-in sets, or a path to a ``.npz``.

:func:`load_dataset` is the one entry point the CLI and the protocols use;
:data:`DATASETS` lists the built-in names with their loaders. The multiview
sets (:data:`evaluation.multiview.MULTIVIEW_DATASETS`: rounds of K views, for
the ``multiview`` protocol, docs/algorithms.md Sec. 0) are listed too;
:func:`load_for_protocol` and :func:`load_any` load either kind.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evaluation.dataset import Dataset
from evaluation.multiview import MULTIVIEW_DATASETS, MultiviewDataset, load_multiview
from evaluation.npzformat import load_npz
from evaluation.params import DatasetParams, parse_spec
from evaluation.realdata import (
    load_landmine,
    load_landmine19,
    load_school,
    load_sentiment4,
    load_spam15,
    load_tdt2,
)
from evaluation.synthetic import synthetic_ella, synthetic_rom, synthetic_saha

__all__ = [
    "DATASETS",
    "MULTIVIEW_PROTOCOL",
    "dataset_names",
    "dataset_summary",
    "is_multiview",
    "load_any",
    "load_dataset",
    "load_for_protocol",
    "multiview_dataset_names",
]

Loader = Callable[[DatasetParams], Dataset]

DATASETS: dict[str, Loader] = {
    "landmine": load_landmine,
    "landmine19": load_landmine19,
    "school": load_school,
    "tdt2": load_tdt2,
    "sentiment4": load_sentiment4,
    "spam15": load_spam15,
    "synthetic-saha": synthetic_saha,
    "synthetic-rom": synthetic_rom,
    "synthetic-ella": synthetic_ella,
}


def dataset_summary(name: str) -> str:
    """The first docstring line of the built-in (or multiview) dataset's loader."""
    loader = DATASETS.get(name) or MULTIVIEW_DATASETS[name]
    doc = loader.__doc__ or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def dataset_names() -> list[str]:
    """The built-in dataset names."""
    return sorted(DATASETS)


def load_dataset(spec: str) -> Dataset:
    """Load ``spec``: a built-in name with optional parameters, or ``PATH.npz[:train=...]``."""
    name, raw = parse_spec(spec)
    if name.endswith(".npz") or Path(name).is_file():
        return load_npz(name, DatasetParams(name, raw))
    loader = DATASETS.get(name)
    if loader is None:
        raise ValueError(
            f"unknown dataset {name!r}; built-in: {', '.join(dataset_names())}, "
            "or a path to a .npz file"
        )
    return loader(DatasetParams(name, raw))


# ------------------------------------------------------------------ multiview sets
#: The protocol of the multiview sets (:mod:`evaluation.protocols.multiview`).
MULTIVIEW_PROTOCOL = "multiview"


def multiview_dataset_names() -> list[str]:
    """The built-in multiview dataset names (rounds of K views)."""
    return sorted(MULTIVIEW_DATASETS)


def is_multiview(spec: str) -> bool:
    """Whether ``spec`` names a built-in multiview dataset."""
    return parse_spec(spec)[0] in MULTIVIEW_DATASETS


def load_any(spec: str) -> Dataset | MultiviewDataset:
    """A multiview dataset when ``spec`` names one, else :func:`load_dataset`."""
    return load_multiview(spec) if is_multiview(spec) else load_dataset(spec)


def load_for_protocol(spec: str, protocol: str) -> Dataset | MultiviewDataset:
    """The dataset ``spec`` for ``protocol``: the multiview protocol takes exactly the
    multiview sets (``ValueError`` naming the right choice otherwise)."""
    multiview = is_multiview(spec)
    if protocol == MULTIVIEW_PROTOCOL and not multiview:
        raise ValueError(
            f"the {MULTIVIEW_PROTOCOL} protocol runs on the multiview datasets: "
            f"{', '.join(multiview_dataset_names())}"
        )
    if multiview and protocol != MULTIVIEW_PROTOCOL:
        raise ValueError(
            f"{parse_spec(spec)[0]!r} is a multiview dataset (rounds of K views): "
            f"use --protocol {MULTIVIEW_PROTOCOL}"
        )
    return load_any(spec)
