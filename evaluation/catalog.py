"""Dataset names: ``NAME[:key=value,...]`` for the built-in sets, or a path to a ``.npz``.

:func:`load_dataset` is the one entry point the CLI and the protocols use;
:data:`DATASETS` lists the built-in names with their loaders.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evaluation.dataset import Dataset
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

__all__ = ["DATASETS", "dataset_names", "dataset_summary", "load_dataset"]

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
    """The first docstring line of the built-in dataset's loader."""
    doc = DATASETS[name].__doc__ or ""
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
