"""Every server-side Lua script of the service, and the one way to call them.

Each script is a :class:`LuaScript`, run by its SHA1 (loaded on first use)
with :meth:`LuaScript.run` (synchronous client), :meth:`LuaScript.run_async`
(asyncio client or the API's :class:`~service.store.resp.RespConnection`) or
queued in a pipeline with :meth:`LuaScript.queue`.

Each API write is one atomic round trip to Redis:

* :data:`APPEND_EVENTS` checks that the model exists with the configuration
  generation the API validated against and that its unapplied backlog is under
  the bound, appends the encoded entries to the log (plain ``XADD``: producers
  never trim) and returns the current snapshot version. So ``/predict`` costs
  one round trip, a request validated against a stale configuration is never
  written, nothing is written for an unknown model, and a request beyond the
  backlog bound is refused whole (the API's 429).
* :data:`APPEND_LABEL` finds the event (an entry id, or row ``i`` of a batch
  entry; a multiview round is labelled like a single event), refuses unknown or trimmed events and events that already carry a
  label, records the label with the event id in the labels hash and appends the
  label entry, all at once. A retry therefore never appends a second entry.

The worker's scripts: :data:`LEASE_ACQUIRE_OR_RENEW` and :data:`LEASE_RELEASE`
(compare-and-set on the lease, :mod:`service.store.lease`),
:data:`WRITE_SNAPSHOT` (a snapshot written only while its writer holds the
lease, :mod:`service.store.snapshot`) and :data:`TRIM_LOG` (the only trimming
of the log, behind what a snapshot holds), :data:`MEMBER_BEAT` (the
workers' membership heartbeat) and :data:`WRITE_REQUESTS` (label requests,
many per call).

All keys of one model share the ``{m}`` hash tag, so the scripts also run on a
Redis Cluster.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import redis
import redis.asyncio as aredis
from redis.client import Pipeline

from service.store import codec
from service.store.cluster import FastConnection

__all__ = [
    "APPEND_EVENTS",
    "APPEND_LABEL",
    "LEASE_ACQUIRE_OR_RENEW",
    "LEASE_RELEASE",
    "LEASE_RENEW",
    "MEMBER_BEAT",
    "REQUEST_FIELDS",
    "SCRIPTS",
    "TRIM_LOG",
    "WRITE_REQUESTS",
    "WRITE_SNAPSHOT",
    "LuaScript",
]


@dataclass(frozen=True)
class LuaScript:
    """A script's source and its SHA1 (the name EVALSHA runs it by)."""

    source: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.source.encode()).hexdigest())

    def run(self, r: redis.Redis, keys: list[str], args: list[Any]) -> Any:
        """Run the script with a synchronous client (loading it if the server lacks it)."""
        try:
            return r.evalsha(self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            return r.eval(self.source, len(keys), *keys, *args)

    def queue(self, pipe: Pipeline, keys: list[str], args: list[Any]) -> None:
        """Queue the script in a pipeline (sent with its source: a pipeline cannot retry).

        A plain ``EVAL`` command: redis-py's cluster pipeline routes it by its keys
        (its ``eval`` method is refused there)."""
        pipe.execute_command("EVAL", self.source, len(keys), *keys, *args)

    async def run_async(
        self, client: aredis.Redis, fast: FastConnection | None, keys: list[str], args: list[Any]
    ) -> Any:
        """Run the script on ``fast`` if given, else with the asyncio ``client``."""
        if fast is not None:
            return await fast.evalsha(self.sha, self.source, keys, args)
        try:
            return await client.evalsha(self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            return await client.eval(self.source, len(keys), *keys, *args)


#: KEYS: config, log, snapshot, progress. ARGV: generation, max backlog, n_entries,
#: then per entry the number of field/value items followed by them.
#: Returns {0} (no model), {-1, generation} (stale configuration), {-2, backlog}
#: (more than max backlog entries wait for the worker: nothing written), or
#: {1, version, id_1, ..., id_n}. No MAXLEN: only the worker trims the log, behind
#: what it has applied and snapshotted (:data:`TRIM_LOG`).
APPEND_EVENTS = LuaScript("""
local gen = redis.call('HGET', KEYS[1], 'generation')
if not gen then return {0} end
if gen ~= ARGV[1] then return {-1, gen} end
local n = tonumber(ARGV[3])
if n > 0 then
  local applied = 0
  local progress = redis.call('HMGET', KEYS[4], 'applied', 'generation')
  if progress[2] == gen then applied = tonumber(progress[1]) end
  local backlog = redis.call('XLEN', KEYS[2]) - applied
  if backlog >= tonumber(ARGV[2]) then return {-2, backlog} end
end
local out = {1, redis.call('HGET', KEYS[3], 'version') or '0'}
local pos = 4
for e = 1, n do
  local nf = tonumber(ARGV[pos])
  local args = {'XADD', KEYS[2], '*'}
  for j = 1, nf do args[3 + j] = ARGV[pos + j] end
  pos = pos + nf + 1
  out[#out + 1] = redis.call(unpack(args))
end
return out
""")

#: KEYS: log, progress. ARGV: applied entries still in the log, entries to keep,
#: generation. Run by the worker right after a snapshot: trims the oldest applied
#: entries beyond the ones to keep (``MAXLEN ~``, so only whole nodes, never an
#: entry the worker has not applied and snapshotted), records how many applied
#: entries remain, and returns {deleted, first id left or ''}.
TRIM_LOG = LuaScript("""
local applied = tonumber(ARGV[1])
local excess = applied - tonumber(ARGV[2])
local deleted = 0
if excess > 0 then
  local len = redis.call('XLEN', KEYS[1])
  deleted = redis.call('XTRIM', KEYS[1], 'MAXLEN', '~', len - excess)
end
redis.call('HSET', KEYS[2], 'applied', applied - deleted, 'generation', ARGV[3])
local first = ''
if deleted > 0 then
  local head = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
  if #head > 0 then first = head[1][1] end
end
return {deleted, first}
""")

#: KEYS: config, log, labels, answers. ARGV: entry id, batch row (-1 for a single
#: event), event id, label text, then the label entry's field/values. An accepted
#: label's event id also goes to the capped answers stream (the annotator pages).
#: It reads the event entry's kind, row count and labels; their field names and
#: kind codes are filled in from :mod:`service.store.codec`, the one definition.
#: Returns {'nomodel'}, {'noevent', why}, {'inline', y text}, {'inline32', 4 bytes},
#: {'inline64', 8 bytes}, {'labelled', y text} or {'accepted'}.
#: Approximate length of a model's answers stream (the annotator pages read only new ones).
ANSWERS_MAXLEN = 10_000

APPEND_LABEL = LuaScript(
    f"""
if redis.call('EXISTS', KEYS[1]) == 0 then return {{'nomodel'}} end
local found = redis.call('XRANGE', KEYS[2], ARGV[1], ARGV[1])
if #found == 0 then return {{'noevent', 'unknown or expired'}} end
local f = found[1][2]
local kind, n, y, y32, y64
for i = 1, #f, 2 do
  local name = f[i]
  if name == '{codec.KIND}' then kind = f[i + 1]
  elseif name == '{codec.N}' then n = tonumber(f[i + 1])
  elseif name == '{codec.Y}' then y = f[i + 1]
  elseif name == '{codec.Y32}' then y32 = f[i + 1]
  elseif name == '{codec.Y64}' then y64 = f[i + 1] end
end
local row = tonumber(ARGV[2])
if kind == '{codec.KIND_EVENT}' or kind == '{codec.KIND_MULTIVIEW}' then
  if row >= 0 then return {{'noevent', 'not a batch entry'}} end
  if y then return {{'inline', y}} end
elseif kind == '{codec.KIND_BATCH}' then
  if row < 0 then return {{'noevent', 'a batch entry: label one of its rows, E/i'}} end
  if n == nil or row >= n then return {{'noevent', 'no such row in the batch'}} end
  if y32 then
    local v = struct.unpack('<f', y32, 4 * row + 1)
    if v == v then return {{'inline32', string.sub(y32, 4 * row + 1, 4 * row + 4)}} end
  end
  if y64 then
    local v = struct.unpack('<d', y64, 8 * row + 1)
    if v == v then return {{'inline64', string.sub(y64, 8 * row + 1, 8 * row + 8)}} end
  end
else
  return {{'noevent', 'not an event'}}
end
local prev = redis.call('HGET', KEYS[3], ARGV[3])
if prev then return {{'labelled', prev}} end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
local args = {{'XADD', KEYS[2], '*'}}
for j = 5, #ARGV do args[#args + 1] = ARGV[j] end
redis.call(unpack(args))
redis.call('XADD', KEYS[4], 'MAXLEN', '~', {ANSWERS_MAXLEN}, '*', 'event', ARGV[3])
return {{'accepted'}}
"""
)


#: KEYS: lease. ARGV: owner, ttl ms. 1 = held by owner now (acquired or renewed), 0 = other owner.
LEASE_ACQUIRE_OR_RENEW = LuaScript("""
local cur = redis.call('GET', KEYS[1])
if not cur then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
""")

#: KEYS: lease. ARGV: owner, ttl ms. 1 = still held by owner and extended, 0 = not held by
#: owner (lost, or expired: a lapsed lease is never taken back by a renewal, the owner
#: reloads the model from its snapshot instead).
LEASE_RENEW = LuaScript("""
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
""")

#: KEYS: lease. ARGV: owner. 1 = released, 0 = not held by owner.
LEASE_RELEASE = LuaScript("""
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
""")

#: KEYS: snapshot, lease, config, history. ARGV: header, arrays, generation, owner ("" = no
#: check), keep. Returns the new version, -1 (lease held by another owner), -2 (other
#: generation, which is also another incarnation of the name) or -3 (the model was deleted).
#: With keep > 1 the snapshot being replaced moves to the history hash first, which keeps
#: the keep - 1 newest (``<version>:header``, ``<version>:arrays``; see ``rollback``).
WRITE_SNAPSHOT = LuaScript("""
if ARGV[4] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[4] then
  return -1
end
local gen = redis.call('HGET', KEYS[3], 'generation')
if not gen then
  return -3
end
if gen ~= ARGV[3] then
  return -2
end
local keep = tonumber(ARGV[5]) or 0
if keep > 1 then
  local old = redis.call('HMGET', KEYS[1], 'version', 'header', 'arrays')
  if old[1] and old[2] and old[3] then
    redis.call('HSET', KEYS[4], old[1] .. ':header', old[2], old[1] .. ':arrays', old[3])
  end
  local versions = {}
  for _, f in ipairs(redis.call('HKEYS', KEYS[4])) do
    local v = string.match(f, '^(%d+):header$')
    if v then table.insert(versions, tonumber(v)) end
  end
  table.sort(versions)
  for i = 1, #versions - (keep - 1) do
    local v = string.format('%d', versions[i])
    redis.call('HDEL', KEYS[4], v .. ':header', v .. ':arrays')
  end
end
local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'header', ARGV[1], 'arrays', ARGV[2])
return v
""")

#: KEYS: workers (sorted set). ARGV: member id, member lifetime ms. Records the
#: member's heartbeat at the server's time, forgets members silent for longer than
#: the lifetime and returns the live members (the worker membership,
#: :mod:`service.worker.membership`). One key: it runs on a Redis Cluster as is.
MEMBER_BEAT = LuaScript("""
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
return redis.call('ZRANGE', KEYS[1], 0, -1)
""")

#: The fields of a label request, in the order :data:`WRITE_REQUESTS` writes them.
REQUEST_FIELDS = ("event", "task", "score", "p", "ref", "ts")

#: KEYS: the label-request stream. ARGV: its approximate MAXLEN, then the values of each
#: request in the order of :data:`REQUEST_FIELDS`. One ``XADD`` per request, in order: the
#: worker's label requests in one call instead of one command each (a pipelined command
#: costs the client several times the CPU of its arguments in a script call).
WRITE_REQUESTS = LuaScript("""
local key, maxlen = KEYS[1], ARGV[1]
for i = 2, #ARGV, 6 do
  redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', 'event', ARGV[i], 'task', ARGV[i + 1],
    'score', ARGV[i + 2], 'p', ARGV[i + 3], 'ref', ARGV[i + 4], 'ts', ARGV[i + 5])
end
return (#ARGV - 1) / 6
""")

#: Every script, by name.
SCRIPTS = {
    "APPEND_EVENTS": APPEND_EVENTS,
    "APPEND_LABEL": APPEND_LABEL,
    "LEASE_ACQUIRE_OR_RENEW": LEASE_ACQUIRE_OR_RENEW,
    "LEASE_RELEASE": LEASE_RELEASE,
    "LEASE_RENEW": LEASE_RENEW,
    "MEMBER_BEAT": MEMBER_BEAT,
    "TRIM_LOG": TRIM_LOG,
    "WRITE_REQUESTS": WRITE_REQUESTS,
    "WRITE_SNAPSHOT": WRITE_SNAPSHOT,
}


# --- per-key rate limits shared by every API process (service/auth/limiter.py) ---

#: KEYS: the bucket (a hash). ARGV: rate (requests/s), burst. Takes one request from
#: the token bucket at the server's clock; returns the seconds to wait as text ("0": taken).
#: The bucket expires once it would be full again.
RATE_TAKE = LuaScript("""
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or burst
local ts = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.17g', now))
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 1)
return string.format('%.6f', wait)
""")
