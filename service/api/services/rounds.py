"""Multiview rounds in the write endpoints: the form check, validation, scoring, encoding.

A model whose learner takes multiview rounds (``mmperc``, ``matrix-pnorm``,
``multiview-*``: the learner class declares ``multiview = True``) is sent
``{"views": {"<task>": x, ...}, "task": "<task>"}``; every other model is sent
``{"task", "x"}``. :func:`check_forms` refuses the other form with a 422 that
says which one the model takes (docs/architecture.md, "Errors").

Every view is validated against its own task's dimension ``d_j`` (the learner's
``view_dims``, from ``task_dims`` at ``PUT /models``); the task names must be
tasks of the model (named at ``PUT /models``); ``task`` must be one of the
views. A task the round leaves out is the zero vector, as in the worker
(docs/architecture.md, "Applying log entries"). A round is one ``k=v`` log
entry (:func:`service.store.codec.encode_multiview`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.api.cache import ModelView
from service.api.errors import BadInput
from service.api.schemas import Features
from service.api.services.appending import to_x
from service.store.codec import X, encode_multiview
from service.store.group_commit import Entry

__all__ = ["Round", "check_forms", "encode_rounds", "is_multiview", "score_round", "to_round"]

#: The instance of a task a round leaves out: the zero vector (any dimension).
_NO_VIEW = (np.zeros(0, dtype=np.int64), np.zeros(0))


@dataclass(frozen=True, slots=True)
class Round:
    """A validated multiview round: the round's task and the views by task name."""

    task: str
    views: dict[str, X]


def is_multiview(view: ModelView) -> bool:
    """Whether the model's learner takes multiview rounds."""
    return bool(getattr(view.snapshot.learner, "multiview", False))


def check_forms(view: ModelView, has_views: Sequence[bool], where: str) -> bool:
    """422 unless every event has the form the model's learner takes; returns whether
    the model is multiview. ``where(i)`` names event i in the message."""
    multiview = is_multiview(view)
    learner = view.config.learner
    for i, given in enumerate(has_views):
        at = where.format(i=i)
        if given and not multiview:
            raise BadInput(
                f"{at} is a multiview round (views) but the learner {learner!r} of model "
                f"{view.name!r} takes single events: send {{task, x}} instead"
            )
        if multiview and not given:
            raise BadInput(
                f"{at} is a single event (x) but the learner {learner!r} of model "
                f"{view.name!r} takes multiview rounds: send "
                '{"views": {"<task>": x, ...}, "task": "<task>"} instead'
            )
    return multiview


def to_round(view: ModelView, views: Mapping[str, Features], task: str, at: str) -> Round:
    """A validated round: known task names, ``task`` among them, every view of its
    task's dimension with finite float32 values (422 with the reason otherwise)."""
    dims = view.snapshot.learner.view_dims  # type: ignore[attr-defined]
    known = view.task_index
    if task not in views:
        raise BadInput(f"{at}.task {task!r} must be one of the round's views")
    out: dict[str, X] = {}
    for name, x in views.items():
        idx = known.get(name)
        if idx is None:
            raise BadInput(
                f"{at}.views: {name!r} is not a task of model {view.name!r} "
                f"(its tasks: {', '.join(repr(t) for t in known) or 'none named'}); "
                "a multiview model's tasks are named at PUT /models (tasks)"
            )
        out[name] = to_x(x, int(dims[idx]), f"{at}.views[{name!r}]")
    return Round(task, out)


def score_round(view: ModelView, r: Round) -> float:
    """The learner's score of the round for its task (never mutates the view)."""
    learner: Any = view.snapshot.learner
    index = view.task_index
    given = {index[name]: x for name, x in r.views.items()}
    instances = [given.get(j, _NO_VIEW) for j in range(learner.n_tasks)]
    return float(learner.decision_views(instances, index[r.task]))


def encode_rounds(
    rounds: Sequence[Round], ys: Sequence[float | None], refs: Sequence[str | None]
) -> list[Entry]:
    """One binary ``k=v`` log entry per round."""
    return [
        encode_multiview(r.task, r.views, y, ref, binary=True)
        for r, y, ref in zip(rounds, ys, refs, strict=True)
    ]
