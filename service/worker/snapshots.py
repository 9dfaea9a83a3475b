"""When the worker snapshots a model, and writing the snapshot under its lease."""

from __future__ import annotations

import time

from service.settings import Settings
from service.store import Store, keys
from service.store.codec import entry_id_tuple
from service.store.snapshot import write_snapshot
from service.worker.state import ModelState

__all__ = ["LABELLED_PRUNE_ABOVE", "snapshot_due", "snapshot_state"]

#: Above this many remembered labelled events, those trimmed from the log are forgotten.
LABELLED_PRUNE_ABOVE = 50_000


def snapshot_due(state: ModelState, settings: Settings, now: float) -> bool:
    """Whether ``state`` has unsnapshotted entries and is due (by entries or by time)."""
    if state.entries_since_snapshot <= 0:
        return False
    return (
        state.entries_since_snapshot >= settings.snapshot_every_entries
        or now - state.last_snapshot_at >= settings.snapshot_every_seconds
    )


def snapshot_state(r: Store, state: ModelState, owner: str) -> int:
    """Write a snapshot of ``state`` while ``owner`` holds the lease; its new version.

    Raises :class:`service.store.snapshot.SnapshotFenced` (writing nothing) when
    the lease is lost or the model was reconfigured.
    """
    if len(state.labelled) > LABELLED_PRUNE_ABOVE:
        first = r.xrange(keys.log_key(state.name), count=1)
        if first:
            raw = first[0][0]
            state.forget_labelled_before(
                entry_id_tuple(raw.decode() if isinstance(raw, bytes) else str(raw))
            )
    snap = state.to_snapshot()
    state.version = write_snapshot(r, state.name, snap, owner=owner)
    state.snapshot_created = snap.created
    state.entries_since_snapshot = 0
    state.last_snapshot_at = time.monotonic()
    return state.version
