"""Group commit: the appends issued during one event-loop iteration share one script call.

Concurrent ``/predict`` and ``/events`` requests of one model that reach the
append step in the same event-loop iteration are written by a single
:data:`~service.store.scripts.APPEND_EVENTS` call (one per configuration
generation), in arrival order; each request then gets its own entry ids back.
Under load this replaces many small round trips, script runs and reply
objects with one. An append made while no other append is queued or waiting
for its reply (a lone request) is written at once, so it starts its round trip
before the request does anything else.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from service.store import keys
from service.store.cluster import FastConnection
from service.store.resp import RespError, pack_args
from service.store.scripts import APPEND_EVENTS, LuaScript

__all__ = ["AppendReply", "Entry", "GroupCommit"]

Entry = dict[str, bytes | str]
ScriptRunner = Callable[[LuaScript, list[str], list[Any]], Awaitable[Any]]


@dataclass(frozen=True)
class AppendReply:
    """``status`` 1 (appended), 0 (unknown model), -1 (stale generation) or -2 (backlog over
    the bound: nothing written); version; entry ids; the backlog when refused."""

    status: int
    version: int
    ids: list[str]
    backlog: int = 0


@dataclass
class _Group:
    name: str
    generation: int
    entries: list[list[Entry]] = field(default_factory=list)
    futures: list[asyncio.Future[AppendReply]] = field(default_factory=list)


class GroupCommit:
    """Batches appends per model and generation within one event-loop iteration."""

    def __init__(
        self, run_script: ScriptRunner, fast: FastConnection | None, max_backlog: int
    ) -> None:
        self._run_script = run_script
        self._fast = fast
        self._max_backlog = max_backlog
        self._groups: dict[tuple[str, int], _Group] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._prefixes: dict[str, bytes] = {}
        self._outstanding = 0

    def append(self, name: str, generation: int, entries: list[Entry]) -> Awaitable[AppendReply]:
        """Queue ``entries`` for model ``name``; the future resolves once they are written."""
        loop = asyncio.get_running_loop()
        alone = not self._groups and not self._outstanding
        if not self._groups and not alone:
            loop.call_soon(self._flush)
        group = self._groups.get((name, generation))
        if group is None:
            group = self._groups[(name, generation)] = _Group(name, generation)
        future: asyncio.Future[AppendReply] = loop.create_future()
        group.entries.append(entries)
        group.futures.append(future)
        if alone:
            self._flush()
        return future

    def _args(self, group: _Group) -> tuple[list[str], list[Any]]:
        name = group.name
        script_keys = [
            keys.config_key(name),
            keys.log_key(name),
            keys.snapshot_key(name),
            keys.progress_key(name),
        ]
        flat = [fields for request in group.entries for fields in request]
        args: list[Any] = [group.generation, self._max_backlog, len(flat)]
        for fields in flat:
            args.append(2 * len(fields))
            for item in fields.items():
                args.extend(item)
        return script_keys, args

    def _flush(self) -> None:
        groups, self._groups = self._groups, {}
        for group in groups.values():
            self._outstanding += 1
            try:
                script_keys, args = self._args(group)
                sent = None
                if self._fast is not None:
                    sent = self._fast.send_packed(
                        self._command(group.name, script_keys, args), now=True
                    )
            except Exception as exc:  # an entry that cannot be encoded: fail its requests
                self._outstanding -= 1
                self._fail(group, exc)
                continue
            if sent is not None:
                sent.add_done_callback(functools.partial(self._done, group, script_keys, args))
            else:
                self._spawn(self._slow(group, script_keys, args))

    def _command(self, name: str, script_keys: list[str], args: list[Any]) -> bytes:
        """EVALSHA of the append script, its constant head packed once per model."""
        prefix = self._prefixes.get(name)
        if prefix is None:
            prefix = pack_args(["EVALSHA", APPEND_EVENTS.sha, len(script_keys), *script_keys])
            self._prefixes[name] = prefix
        return b"*%d\r\n" % (3 + len(script_keys) + len(args)) + prefix + pack_args(args)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _done(
        self, group: _Group, script_keys: list[str], args: list[Any], sent: asyncio.Future[Any]
    ) -> None:
        error = sent.exception()
        if isinstance(error, RespError) and str(error).startswith("NOSCRIPT"):
            self._spawn(self._slow(group, script_keys, args))
            return
        self._outstanding -= 1
        if error is not None:
            self._fail(group, error)
        else:
            self._resolve(group, sent.result())

    async def _slow(self, group: _Group, script_keys: list[str], args: list[Any]) -> None:
        try:
            reply = await self._run_script(APPEND_EVENTS, script_keys, args)
        except Exception as exc:
            self._fail(group, exc)
        else:
            self._resolve(group, reply)
        finally:
            self._outstanding -= 1

    @staticmethod
    def _fail(group: _Group, error: BaseException) -> None:
        for future in group.futures:
            if not future.done():
                future.set_exception(error)

    @staticmethod
    def _resolve(group: _Group, reply: list[Any]) -> None:
        status = int(reply[0])
        if status != 1:
            backlog = int(reply[1]) if status == -2 else 0
            for future in group.futures:
                if not future.done():
                    future.set_result(AppendReply(status, 0, [], backlog))
            return
        version = int(reply[1])
        ids = [i.decode() for i in reply[2:]]
        start = 0
        for request, future in zip(group.entries, group.futures, strict=True):
            end = start + len(request)
            if not future.done():
                future.set_result(AppendReply(1, version, ids[start:end]))
            start = end
