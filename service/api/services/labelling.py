"""``POST /label``: accept the label of an event once (see :data:`service.store.scripts.APPEND_LABEL`).

* first label of a known event: recorded and appended to the log, 202 ``accepted``;
* the same label again (a retry, the same number exactly): 202 ``duplicate``,
  nothing appended;
* a different label, also against a label the event carried when it was
  appended: 409;
* an unknown or trimmed event: 404; a label outside the model's kind: 422.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from service.api.context import ApiContext
from service.api.errors import BadInput, Conflict, NotFound
from service.api.schemas import LabelRequest
from service.store import keys
from service.store.codec import Y, encode_label, split_event_id
from service.store.scripts import APPEND_LABEL

__all__ = ["label"]


async def label(ctx: ApiContext, req: LabelRequest) -> dict[str, Any]:
    """Record ``req.y`` as the label of ``req.event_id`` at most once."""
    name = ctx.model_name(req.model)
    view = await ctx.cache.get(name)
    if view is None:
        raise NotFound(f"unknown model {name!r}")
    problem = view.label_problem(req.y)
    if problem is not None:
        raise BadInput(f"y {problem}")
    entry, row = split_event_id(req.event_id)
    fields = encode_label(req.event_id, req.y, req.annotator)
    args: list[Any] = [entry, -1 if row is None else row, req.event_id, fields[Y]]
    for key, value in fields.items():
        args += [key, value]
    reply = await ctx.run_script(
        APPEND_LABEL,
        [keys.config_key(name), keys.log_key(name), keys.labels_key(name), keys.answers_key(name)],
        args,
    )
    status = reply[0].decode()
    if status == "accepted":
        return {"status": "accepted", "event_id": req.event_id, "y": req.y}
    if status == "nomodel":
        ctx.cache.forget(name)
        raise NotFound(f"unknown model {name!r}")
    if status == "noevent":
        raise NotFound(
            f"event {req.event_id!r} of model {name!r}: {reply[1].decode()} "
            "(events trimmed from the log can no longer be labelled)"
        )
    # labels are stored exactly (decimal text, float64, or float32 only when exact),
    # so a repeated label is the same number, bit for bit
    if status == "inline32":
        existing = float(np.frombuffer(reply[1], dtype="<f4")[0])
    elif status == "inline64":
        existing = float(np.frombuffer(reply[1], dtype="<f8")[0])
    else:
        existing = float(reply[1])
    if existing == req.y:
        return {"status": "duplicate", "event_id": req.event_id, "y": req.y}
    raise Conflict(f"event {req.event_id!r} already has the label {existing:g}; refusing {req.y:g}")
