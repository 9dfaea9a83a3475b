"""Lease upkeep of the models a worker owns: renew, heartbeat, follow the configuration.

The leases are renewed by a :class:`LeaseKeeper`, a thread with a Redis
connection of its own, every tick (a third of the lease lifetime at most),
whatever the work loop is doing: a read whose application takes longer than
the lease (a big batch entry, a learner whose one update takes seconds, a large
snapshot) no longer lets the lease lapse, so the fenced snapshot that follows
it succeeds and the model is not reloaded and replayed over and over.

Each renewal is one pipeline per tick (:func:`renew_owned`): renew every owned
lease (never taking a lapsed one back), read each configuration generation and
write each heartbeat; the same tick records the worker's membership heartbeat
(:mod:`service.worker.membership`) and keeps the live members for the work
loop's assignment. What it finds (a lease lost, a model deleted or
reconfigured) is handed to the work loop, which drops the model; snapshots stay
fenced by the lease (:data:`service.store.scripts.WRITE_SNAPSHOT`).

By default the keeper renews for as long as the process lives, however long
one step takes (a livelock is impossible: the step ends, its snapshot is
written). With ``stall_s`` > 0 it renews only while the work loop shows signs
of life (:meth:`LeaseKeeper.beat`, called between reads and between chunks of a
read): a loop stuck that long lets its leases expire, so another worker takes
the models over; set it above the longest step a model can take.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from service.store import Store, StoreError, connect, keys
from service.store.lease import queue_renew
from service.worker.membership import beat

__all__ = ["LeaseKeeper", "Renewal", "as_generation", "renew_owned"]

log = logging.getLogger("omtl.worker")


def as_generation(value: object) -> int | None:
    """A config's ``generation`` field as read from Redis: None when the model is gone,
    -1 when the field is not an integer (crafted: the model is reloaded, and fails)."""
    if value is None:
        return None
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return -1


@dataclass(frozen=True, slots=True)
class Renewal:
    """One owned model after a renewal: whether the lease is still ours, and its generation."""

    name: str
    held: bool
    generation: int | None

    def verdict(self, loaded_generation: int) -> str | None:
        """Why the worker must let the model go, or None to keep it."""
        if not self.held:
            return "lease lost to another worker"
        if self.generation is None:
            return "model deleted"
        if self.generation != loaded_generation:
            return "model reconfigured; starting afresh"
        return None


def renew_owned(
    r: Store, names: Sequence[str], owner: str, ttl_ms: int, heartbeat_ttl_s: int
) -> list[Renewal]:
    """Renew the leases of ``names``, read their generations and write their heartbeats."""
    if not names:
        return []
    now = str(time.time())
    with r.pipeline(transaction=False) as p:
        for name in names:
            queue_renew(p, name, owner, ttl_ms)
            p.hget(keys.config_key(name), "generation")
            p.set(keys.heartbeat_key(name), now, ex=heartbeat_ttl_s)
        replies = p.execute()
    out = []
    for i, name in enumerate(names):
        held, generation = replies[3 * i], replies[3 * i + 1]
        out.append(Renewal(name, bool(held), as_generation(generation)))
    return out


class LeaseKeeper:
    """Renews the owned models' leases on a thread of its own (see the module docstring).

    The work loop tells it which models it owns (:meth:`own`, :meth:`disown`),
    calls :meth:`beat` while it works, and collects what the renewals found with
    :meth:`take_renewals` (only models still owned).
    """

    def __init__(
        self,
        url: str,
        owner: str,
        ttl_ms: int,
        heartbeat_ttl_s: int,
        tick: float,
        stall_s: float,
    ) -> None:
        self.owner = owner
        self.ttl_ms = ttl_ms
        self.heartbeat_ttl_s = heartbeat_ttl_s
        self.tick = tick
        self.stall_s = stall_s
        self._url = url
        self._lock = threading.Lock()
        self._owned: set[str] = set()
        self._found: dict[str, Renewal] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._r: Store | None = None
        self._last_beat = time.monotonic()
        #: completed renewal rounds (for tests and metrics)
        self.rounds = 0
        #: the live workers seen by the latest membership heartbeat (None before the first)
        self.members: list[str] | None = None

    # ------------------------------------------------------------ called by the work loop
    def own(self, name: str) -> None:
        """Renew ``name`` from now on."""
        with self._lock:
            self._owned.add(name)
            self._found.pop(name, None)

    def disown(self, name: str) -> None:
        """Stop renewing ``name`` (dropped or released)."""
        with self._lock:
            self._owned.discard(name)
            self._found.pop(name, None)

    def beat(self) -> None:
        """The work loop is alive."""
        self._last_beat = time.monotonic()

    def take_renewals(self) -> list[Renewal]:
        """The latest renewal of each owned model since the last call."""
        with self._lock:
            found, self._found = self._found, {}
            return [r for name, r in found.items() if name in self._owned]

    def beat_now(self) -> list[str]:
        """Record the membership heartbeat at once on the caller's thread; the live members."""
        self.members = beat(self._client(), self.owner, self.ttl_ms)
        return self.members

    def renew_now(self) -> list[Renewal]:
        """Renew at once on the caller's thread (the first tick of a loop, tests)."""
        return self._renew(self._client())

    # ------------------------------------------------------------ the thread
    def start(self) -> None:
        """Start renewing in the background."""
        self._stop.clear()
        self._last_beat = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="omtl-lease-keeper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (and wait for it)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _client(self) -> Store:
        if self._r is None:
            self._r = connect(self._url)
        return self._r

    def _renew(self, r: Store) -> list[Renewal]:
        with self._lock:
            names = sorted(self._owned)
        renewals = renew_owned(r, names, self.owner, self.ttl_ms, self.heartbeat_ttl_s)
        self.members = beat(r, self.owner, self.ttl_ms)  # after the leases: never delays them
        with self._lock:
            for renewal in renewals:
                if renewal.name in self._owned:
                    self._found[renewal.name] = renewal
        self.rounds += 1
        return renewals

    def _run(self) -> None:
        r = connect(self._url)
        try:
            while not self._stop.wait(self.tick):
                stalled = time.monotonic() - self._last_beat
                if self.stall_s > 0 and stalled > self.stall_s:
                    log.error(
                        "worker %s: no progress for %.0f s; letting its leases expire",
                        self.owner,
                        stalled,
                    )
                    continue
                try:
                    self._renew(r)
                except (StoreError, OSError) as exc:
                    log.warning("worker %s: lease renewal failed: %s", self.owner, exc)
        finally:
            r.close()

    def close(self) -> None:
        """Stop the thread and close the connections."""
        self.stop()
        if self._r is not None:
            self._r.close()
            self._r = None
