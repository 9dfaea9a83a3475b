"""Loaders for the real multitask benchmarks under ``OMTL_DATA`` (see its README).

Every loader takes a :class:`~evaluation.params.DatasetParams` and returns
a :class:`~evaluation.dataset.Dataset`. Classification labels are mapped
to {-1, +1} (docs/algorithms.md Sec. 0: ``y <- 2y - 1``). None of the real sets ships
a fixed train/test split except ``school`` (the ten published 75/25 splits), so
each gets the split its paper uses, drawn afresh per run (``draw_split``);
``train=`` / ``test=`` override it (a count per task, or a fraction when < 1).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import scipy.io as sio
import scipy.sparse as sp

from evaluation.datapath import data_file
from evaluation.dataset import Dataset
from evaluation.params import DatasetParams
from evaluation.splits import SplitRule, per_task_split

__all__ = [
    "load_landmine",
    "load_landmine19",
    "load_school",
    "load_sentiment4",
    "load_spam15",
    "load_tdt2",
]

#: Original (1-based) landmine tasks of the 19-task version (xu2018; PEER's ``sTids``).
LANDMINE19_TASKS = (*range(1, 11), *range(16, 25))


def _pm_one(labels: np.ndarray) -> np.ndarray:
    """{0, 1} labels as {-1, +1} floats."""
    return 2.0 * np.asarray(labels, dtype=np.float64).reshape(-1) - 1.0


def _task_column(sizes: list[int]) -> np.ndarray:
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)


def _split_rule(
    p: DatasetParams, task: np.ndarray, train: float
) -> tuple[SplitRule, float, float | None]:
    """The per-task split rule with the user's ``train``/``test`` overrides."""
    train = p.get_float("train", train, positive=True)
    test = p.get_optional_float("test")
    return per_task_split(task, train, test), train, test


def _landmine(
    p: DatasetParams, original_tasks: tuple[int, ...], train: float, name: str
) -> Dataset:
    mat = sio.loadmat(data_file("landmine", "LandmineData.mat"))
    feats = [np.asarray(mat["feature"][0][t - 1], dtype=np.float64) for t in original_tasks]
    labels = [_pm_one(mat["label"][0][t - 1]) for t in original_tasks]
    task = _task_column([f.shape[0] for f in feats])
    draw, train, _ = _split_rule(p, task, train)
    p.finish()
    return Dataset(
        name=name,
        X=np.vstack(feats),
        y=np.concatenate(labels),
        task=task,
        task_names=[f"region{t}" for t in original_tasks],
        draw_split=draw,
        description=(
            f"Landmine detection (Xue et al. 2007), {len(original_tasks)} regions, 9 features "
            f"(no bias), labels +1 = landmine. Split per run: {train:g} training rows per task "
            f"(fraction when < 1), the rest for test."
        ),
    )


def load_landmine(p: DatasetParams) -> Dataset:
    """All 29 landmine regions; per-run split 50/50 within each task (ruvolo2014 Sec. 5)."""
    return _landmine(p, tuple(range(1, 30)), 0.5, "landmine")


def load_landmine19(p: DatasetParams) -> Dataset:
    """The 19-region subset of xu2018 (tasks 1-10, 16-24); 160 training rows per task."""
    return _landmine(p, LANDMINE19_TASKS, 160, "landmine19")


def load_school(p: DatasetParams) -> Dataset:
    """London schools (regression, 139 tasks, 28 features including a bias column).

    ``split=1..10`` uses one of the ten published 75/25 splits of Argyriou et al.;
    by default a fresh 75/25 split within each school is drawn per run.
    """
    mat = sio.loadmat(data_file("school", "school_b.mat"))
    X = np.asarray(mat["x"], dtype=np.float64).T
    y = np.asarray(mat["y"], dtype=np.float64).reshape(-1)
    starts = np.asarray(mat["task_indexes"], dtype=np.int64).reshape(-1) - 1
    sizes = np.diff(np.append(starts, X.shape[0])).tolist()
    task = _task_column(sizes)
    which = p.get_int("split", 0, minimum=0)
    fixed: np.ndarray | None = None
    if which:
        if which > 10:
            raise ValueError("dataset 'school': split must be 1..10 (the published splits)")
        idx = sio.loadmat(data_file("school", f"school_{which}_indexes.mat"))
        fixed = np.full(X.shape[0], 1, dtype=np.int8)
        fixed[np.asarray(idx["tr"], dtype=np.int64).reshape(-1) - 1] = 0
        draw = None
        how = f"published split {which} (75/25)"
    else:
        draw, train, _ = _split_rule(p, task, 0.75)
        how = f"fresh split per run, {train:g} of each school for training"
    p.finish()
    return Dataset(
        name="school",
        X=X,
        y=y,
        task=task,
        task_names=[f"school{t + 1}" for t in range(len(sizes))],
        kind="regression",
        split=fixed,
        draw_split=draw,
        description=(
            "London schools exam scores (Goldstein 1991; Argyriou et al. 2008 encoding), "
            f"139 schools, 28 features (last = bias), target = score 1..70. Split: {how}."
        ),
    )


def load_tdt2(p: DatasetParams) -> Dataset:
    """TDT2, 20 largest topics as one-vs-rest tasks (zhang2018 Sec. IV).

    Task t holds every document of topic t (+1) and ``negatives`` times as many
    documents drawn from the other topics (-1), with generator ``seed``; the
    paper does not state its negative sampling. Raw term counts, 36,771 features.
    """
    ratio = p.get_float("negatives", 1.0, positive=True)
    seed = p.get_int("seed", 0, minimum=0)
    mat = sio.loadmat(data_file("tdt2_top20", "TDT2.mat"))
    fea = sp.csr_matrix(mat["fea"], dtype=np.float64)
    gnd = np.asarray(mat["gnd"], dtype=np.int64).reshape(-1)
    rng = np.random.default_rng(seed)
    rows, labels, sizes = [], [], []
    topics = np.unique(gnd)
    for topic in topics:
        pos = np.flatnonzero(gnd == topic)
        others = np.flatnonzero(gnd != topic)
        k = min(others.shape[0], round(ratio * pos.shape[0]))
        neg = np.sort(rng.choice(others, size=k, replace=False))
        rows.extend([pos, neg])
        labels.extend([np.ones(pos.shape[0]), -np.ones(k)])
        sizes.append(pos.shape[0] + k)
    task = _task_column(sizes)
    draw, train, _ = _split_rule(p, task, 0.5)
    p.finish()
    return Dataset(
        name="tdt2",
        X=sp.csr_matrix(fea[np.concatenate(rows)]),
        y=np.concatenate(labels),
        task=task,
        task_names=[f"topic{int(t)}" for t in topics],
        draw_split=draw,
        description=(
            "TDT2 (Cai et al. 2005), 20 largest topics, one-vs-rest: every document of the "
            f"topic (+1) and {ratio:g}x as many from other topics (-1, seed {seed}); raw term "
            f"counts. Split per run: {train:g} of each task for training."
        ),
    )


def load_spam15(p: DatasetParams) -> Dataset:
    """ECML/PKDD 2006 task B, 15 inboxes (xu2018): 100 training emails per user, rest test."""
    mat = sio.loadmat(data_file("spam_ecml2006_taskB", "emails.mat"))
    parts = [sp.csr_matrix(m, dtype=np.float64) for m in mat["X"][0]]
    labels = [_pm_one(v) for v in mat["Y"][0]]
    task = _task_column([m.shape[0] for m in parts])
    draw, train, _ = _split_rule(p, task, 100)
    p.finish()
    return Dataset(
        name="spam15",
        X=sp.csr_matrix(sp.vstack(parts, format="csr")),
        y=np.concatenate(labels),
        task=task,
        task_names=[f"user{t}" for t in range(len(parts))],
        draw_split=draw,
        description=(
            "ECML/PKDD 2006 Discovery Challenge task B, 15 inboxes x 400 emails, raw term "
            f"counts (152,543 features), +1 = spam. Split per run: {train:g} training emails "
            "per user, the rest for test (xu2018)."
        ),
    )


SENTIMENT_DOMAINS = ("books", "dvd", "electronics", "kitchen")
_REVIEW = re.compile(r"<review>(.*?)</review>", re.S)
_FIELD = {f: re.compile(rf"<{f}>\s*(.*?)\s*</{f}>", re.S) for f in ("title", "review_text")}
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _reviews(path: Path) -> list[list[str]]:
    """Token lists (title + review text, lower case) of one ``.review`` file."""
    text = path.read_bytes().decode("latin-1")
    out = []
    for block in _REVIEW.findall(text):
        parts = [m.group(1) for f in _FIELD.values() if (m := f.search(block))]
        out.append(_TOKEN.findall(" ".join(parts).lower()))
    return out


def load_sentiment4(p: DatasetParams) -> Dataset:
    """Blitzer et al. 2007, 4 domains x 2,000 reviews; bag-of-words built here.

    Features are unigram counts of title + review text (``binary=true`` for 0/1)
    over the words found in at least ``min_df`` reviews (default 2). Split per run:
    xu2018 uses 100 training and 300 test reviews per domain; the default here is
    ``train=0.5`` of each domain (``train=100,test=300`` reproduces xu2018).
    """
    min_df = p.get_int("min_df", 2, minimum=1)
    binary = p.get_bool("binary", False)
    docs: list[list[str]] = []
    labels: list[float] = []
    sizes = []
    for domain in SENTIMENT_DOMAINS:
        n_before = len(docs)
        for polarity, label in (("positive", 1.0), ("negative", -1.0)):
            found = _reviews(
                data_file("sentiment_blitzer_acl4", "sorted_data_acl", domain, f"{polarity}.review")
            )
            docs.extend(found)
            labels.extend([label] * len(found))
        sizes.append(len(docs) - n_before)
    df: dict[str, int] = {}
    for tokens in docs:
        for word in set(tokens):
            df[word] = df.get(word, 0) + 1
    vocab = {w: i for i, w in enumerate(sorted(w for w, c in df.items() if c >= min_df))}
    indptr: list[int] = [0]
    indices: list[int] = []
    data: list[float] = []
    for tokens in docs:
        counts: dict[int, int] = {}
        for word in tokens:
            j = vocab.get(word)
            if j is not None:
                counts[j] = counts.get(j, 0) + 1
        cols = sorted(counts)
        indices.extend(cols)
        data.extend(1.0 if binary else float(counts[j]) for j in cols)
        indptr.append(len(indices))
    X = sp.csr_matrix(
        (np.asarray(data), np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
        shape=(len(docs), len(vocab)),
    )
    task = _task_column(sizes)
    draw, train, test = _split_rule(p, task, 0.5)
    p.finish()
    return Dataset(
        name="sentiment4",
        X=X,
        y=np.asarray(labels),
        task=task,
        task_names=list(SENTIMENT_DOMAINS),
        draw_split=draw,
        description=(
            f"Multi-domain sentiment (Blitzer et al. 2007), 4 domains x 2,000 reviews, "
            f"{len(vocab)} unigram {'indicators' if binary else 'counts'} (min_df {min_df}). "
            f"Split per run: {train:g} training reviews per domain"
            + (f", {test:g} test." if test is not None else ", the rest for test.")
        ),
    )
