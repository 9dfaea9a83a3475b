"""A model the worker holds the lease of: its state, outbox and applier, loaded from Redis."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from service.store import Store, StoreReplyError, keys
from service.store.codec import entry_id_tuple, parse_event_id
from service.store.models import ModelLimits, expected_state, get_model, initial_snapshot
from service.store.snapshot import read_snapshot
from service.worker.apply import Applier
from service.worker.outbox import Outbox
from service.worker.state import ModelState

__all__ = ["REMOVE_CHUNK", "Owned", "load_owned", "remove_members"]


class Owned:
    """A model this worker holds the lease of."""

    def __init__(self, state: ModelState, r: Store) -> None:
        self.state = state
        self.log_key = keys.log_key(state.name)
        self._r = r
        self.outbox = Outbox()
        self.applier = Applier(state, self.outbox, self.fetch, self.record_cut)
        self.start_totals = dict(state.totals)
        #: the totals of the last snapshot written (or loaded): what is kept of the work when
        #: the model is let go without a snapshot (a lost lease, a failure; Worker._drop)
        #: or rolled back to it (Worker._roll_back)
        self.snapshot_totals = dict(state.totals)
        self.lag = 0
        #: log entries no longer in the log (trimmed); the applied entries still in the
        #: log are ``state.totals["entries"] - trimmed`` (see :meth:`applied_in_log`)
        self.trimmed = 0
        #: the last step ran out of time with entries left (they are in ``state.pending``)
        self.cut_short = False

    def applied_in_log(self) -> int:
        """How many of the log's entries this model has applied (the rest is its backlog)."""
        return max(0, self.state.totals["entries"] - self.trimmed)

    def record_cut(self, entry_id: bytes) -> None:
        """Keep a group boundary in Redis, for replays (:meth:`Applier.apply`)."""
        self.record_cuts([entry_id])

    def quarantine(self, entry_id: bytes, reason: str) -> None:
        """Keep in Redis that the learner failed on this entry, with the error: every
        replay leaves it out (docs/architecture.md, "When the learner fails")."""
        self._r.hset(keys.quarantine_key(self.state.name), entry_id, reason)

    def record_cuts(self, entry_ids: list[bytes]) -> None:
        """Keep in Redis that each of these entries starts a group (or run) of its own."""
        self._r.sadd(keys.cuts_key(self.state.name), *entry_ids)

    def forget_quarantine_and_cuts_before(self, head: tuple[int, int]) -> None:
        """Drop the ids of quarantined entries and of group cuts (failures and read
        boundaries alike) older than the log's first entry ``head``: they were trimmed away
        behind a snapshot, so no replay meets them again and the two keys hold only
        entries still in the log."""
        st = self.state
        name = st.name
        gone_q = [e for e in st.quarantined if entry_id_tuple(e.decode()) < head]
        gone_c = [e for e in st.cuts if entry_id_tuple(e.decode()) < head]
        remove_members(self._r.hdel, keys.quarantine_key(name), gone_q)
        remove_members(self._r.srem, keys.cuts_key(name), gone_c)
        for e in gone_q:
            del st.quarantined[e]
        st.cuts.difference_update(gone_c)

    def fetch(self, entry_id: str) -> list[Any] | None:
        """The raw field list of one entry of the model's log, or None when it is gone."""
        found = self._r.xrange(self.log_key, entry_id, entry_id)
        if not found:
            return None
        flat: list[Any] = []
        for k, v in (found[0][1] or {}).items():
            flat.extend((k, v))
        return flat


#: Members removed per command (a command of millions of arguments would block Redis).
REMOVE_CHUNK = 1000


def remove_members(remove: Callable[..., Any], key: str, members: Sequence[Any]) -> None:
    """``remove(key, *members)`` (``HDEL``, ``SREM``) in chunks of :data:`REMOVE_CHUNK`."""
    for start in range(0, len(members), REMOVE_CHUNK):
        remove(key, *members[start : start + REMOVE_CHUNK])


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def trimmed_entries(r: Store, name: str) -> int:
    """How many entries the model's log has lost to trimming (added minus still there)."""
    try:
        info: dict[Any, Any] = r.xinfo_stream(keys.log_key(name))
    except StoreReplyError:  # no log yet
        return 0
    added = info.get("entries-added", info.get(b"entries-added"))
    length = info.get("length", info.get(b"length"))
    if added is None or length is None:
        return 0
    return max(0, int(added) - int(length))


def load_owned(
    r: Store,
    name: str,
    limits: ModelLimits | None = None,
    recorded: tuple[set[bytes], dict[bytes, str]] | None = None,
) -> Owned | None:
    """The model's state from its latest snapshot of the current generation (or the
    initial state), with how far label requests and dead letters were already
    written; None when the model does not exist. ``recorded``: the model's cuts and
    quarantined entries as the caller holds them (a worker rolling the model back),
    instead of reading them from Redis again.

    The configuration and the snapshot are checked against ``limits`` before
    anything is built (``ValueError`` subclasses with the reason: ``ConfigInvalid``,
    ``ModelTooLarge``, ``SnapshotInvalid``). An event that would later grow the
    model beyond ``limits`` is dead-lettered.
    """
    limits = limits or ModelLimits()
    config = get_model(r, name)
    if config is None:
        return None
    limits.check(config.learner, config.n_features, max(1, len(config.tasks)), config.params)
    snap = read_snapshot(r, name, expected_state(config, limits))
    if snap is None or snap.generation != config.generation:
        snap = initial_snapshot(name, config)
    state = ModelState(name, snap)
    state.check_task_count = lambda k: limits.check(
        config.learner, config.n_features, k, config.params
    )
    if recorded is not None:
        state.cuts, state.quarantined = set(recorded[0]), dict(recorded[1])
    else:
        state.cuts = {
            c if isinstance(c, bytes) else c.encode() for c in r.smembers(keys.cuts_key(name))
        }
        state.quarantined = {
            (k if isinstance(k, bytes) else k.encode()): _text(v)
            for k, v in r.hgetall(keys.quarantine_key(name)).items()
        }
    last_query = r.xrevrange(keys.queries_key(name), count=1)
    if last_query:
        event = (last_query[0][1] or {}).get(b"event")
        if event is not None:
            state.queries_done_upto = parse_event_id(_text(event))
    last_dead = r.xrevrange(keys.dead_key(name), count=1)
    if last_dead:
        entry = (last_dead[0][1] or {}).get(b"entry")
        if entry is not None:
            state.dead_done_upto = entry_id_tuple(_text(entry))
    owned = Owned(state, r)
    owned.trimmed = trimmed_entries(r, name)
    return owned
