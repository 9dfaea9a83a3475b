"""When the worker snapshots a model, writing the snapshot under its lease, and trimming
the log behind it.

The log is trimmed only here, right after a snapshot: the oldest applied entries
beyond the ``stream_maxlen`` most recent ones go (kept so that labels can still
find their events), never an entry the snapshot does not hold. Producers never
trim, so an appended event is applied (or dead-lettered) before it can leave the
log. The labels hash (``omtl:{m}:labels``) loses the events trimmed away with
them, and so do the quarantined and cut entries (``omtl:{m}:quarantine``,
``omtl:{m}:cuts``). See ``docs/architecture.md``, "The log".
"""

from __future__ import annotations

import time

from service.settings import Settings
from service.store import Store, keys
from service.store.codec import entry_id_tuple
from service.store.scripts import TRIM_LOG
from service.store.snapshot import write_snapshot
from service.worker.owned import Owned, remove_members
from service.worker.state import ModelState

__all__ = ["history_keep", "snapshot_due", "snapshot_state", "trim_log"]


def snapshot_due(state: ModelState, settings: Settings, now: float) -> bool:
    """Whether ``state`` has unsnapshotted entries and is due (by entries, by time, or
    because a quarantined entry was passed: ``state.snapshot_soon``)."""
    if state.entries_since_snapshot <= 0:
        return False
    return (
        state.snapshot_soon
        or state.entries_since_snapshot >= settings.snapshot_every_entries
        or now - state.last_snapshot_at >= settings.snapshot_every_seconds
    )


def history_keep(state: ModelState, settings: Settings | None, now: float) -> int:
    """How many snapshots the next write keeps: ``OMTL_SNAPSHOT_KEEP`` when the one it
    replaces is to go to the history (at most once per ``OMTL_SNAPSHOT_KEEP_EVERY_S``),
    else 1 (replaced, not kept). See docs/architecture.md, "Export, import and rollback"."""
    if settings is None or settings.snapshot_keep <= 1:
        return 1
    if now - state.archived_at < settings.snapshot_keep_every_s:
        return 1
    return settings.snapshot_keep


def snapshot_state(
    r: Store, state: ModelState, owner: str, settings: Settings | None = None
) -> int:
    """Write a snapshot of ``state`` while ``owner`` holds the lease; its new version.
    With ``settings``, the snapshot it replaces may go to the history (:func:`history_keep`).

    Raises :class:`service.store.snapshot.SnapshotFenced` (writing nothing) when
    the lease is lost or the model was reconfigured.
    """
    snap = state.to_snapshot()
    now = time.monotonic()
    keep = history_keep(state, settings, now)
    state.version = write_snapshot(r, state.name, snap, owner=owner, keep=keep)
    if keep > 1:
        state.archived_at = now
    state.snapshot_created = snap.created
    state.entries_since_snapshot = 0
    state.snapshot_soon = False
    state.last_snapshot_at = time.monotonic()
    return state.version


def _text(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else v


def trim_log(r: Store, owned: Owned, keep: int) -> int:
    """Right after a snapshot of ``owned``: trim its log's applied entries beyond the
    ``keep`` most recent, and forget the labels of the events trimmed. Returns how
    many entries were trimmed."""
    st = owned.state
    name = st.name
    deleted, first = TRIM_LOG.run(
        r,
        [keys.log_key(name), keys.progress_key(name)],
        [owned.applied_in_log(), keep, st.generation],
    )
    deleted = int(deleted)
    owned.trimmed += deleted
    if deleted and first:
        head = entry_id_tuple(_text(first))
        gone = [key for key in st.labelled if (key[0], key[1]) < head]
        if gone:
            fields = [f"{a}-{b}" if c < 0 else f"{a}-{b}/{c}" for a, b, c in gone]
            remove_members(r.hdel, keys.labels_key(name), fields)
            st.forget_labelled_before(head)
        st.forget_requested_before(head)
        if st.quarantined or st.cuts:
            owned.forget_quarantine_and_cuts_before(head)
    return deleted
