"""Server-side Lua scripts: each API write is one atomic round trip to Redis.

* :data:`APPEND_EVENTS` checks that the model exists with the configuration
  generation the API validated against, appends the encoded entries to the log
  (``XADD MAXLEN ~``) and returns the current snapshot version. So ``/predict``
  costs one round trip, a request validated against a stale configuration is
  never written, and nothing is written for an unknown model.
* :data:`APPEND_LABEL` finds the event (an entry id, or row ``i`` of a batch
  entry), refuses unknown or trimmed events and events that already carry a
  label, records the label with the event id in the labels hash and appends the
  label entry, all at once. A retry therefore never appends a second entry.

All keys of one model share the ``{m}`` hash tag, so the scripts also run on a
Redis Cluster.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

__all__ = ["APPEND_EVENTS", "APPEND_LABEL", "LuaScript"]


@dataclass(frozen=True)
class LuaScript:
    """A script's source and its SHA1 (the name EVALSHA runs it by)."""

    source: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.source.encode()).hexdigest())


#: KEYS: config, log, snapshot. ARGV: generation, maxlen, n_entries, then per
#: entry the number of field/value items followed by them.
#: Returns {0} (no model), {-1, generation} (stale configuration), or
#: {1, version, id_1, ..., id_n}.
APPEND_EVENTS = LuaScript("""
local gen = redis.call('HGET', KEYS[1], 'generation')
if not gen then return {0} end
if gen ~= ARGV[1] then return {-1, gen} end
local out = {1, redis.call('HGET', KEYS[3], 'version') or '0'}
local pos = 4
for e = 1, tonumber(ARGV[3]) do
  local nf = tonumber(ARGV[pos])
  local args = {'XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*'}
  for j = 1, nf do args[6 + j] = ARGV[pos + j] end
  pos = pos + nf + 1
  out[#out + 1] = redis.call(unpack(args))
end
return out
""")

#: KEYS: config, log, labels. ARGV: entry id, batch row (-1 for a single
#: event), event id, label text, maxlen, then the label entry's field/values.
#: Returns {'nomodel'}, {'noevent', why}, {'inline', y text}, {'inline32', 4 bytes},
#: {'labelled', y text} or {'accepted'}.
APPEND_LABEL = LuaScript("""
if redis.call('EXISTS', KEYS[1]) == 0 then return {'nomodel'} end
local found = redis.call('XRANGE', KEYS[2], ARGV[1], ARGV[1])
if #found == 0 then return {'noevent', 'unknown or expired'} end
local f = found[1][2]
local kind, n, y, y32
for i = 1, #f, 2 do
  local name = f[i]
  if name == 'k' then kind = f[i + 1]
  elseif name == 'n' then n = tonumber(f[i + 1])
  elseif name == 'y' then y = f[i + 1]
  elseif name == 'y32' then y32 = f[i + 1] end
end
local row = tonumber(ARGV[2])
if kind == 'e' then
  if row >= 0 then return {'noevent', 'not a batch entry'} end
  if y then return {'inline', y} end
elseif kind == 'b' then
  if row < 0 then return {'noevent', 'a batch entry: label one of its rows, E/i'} end
  if n == nil or row >= n then return {'noevent', 'no such row in the batch'} end
  if y32 then
    local v = struct.unpack('<f', y32, 4 * row + 1)
    if v == v then return {'inline32', string.sub(y32, 4 * row + 1, 4 * row + 4)} end
  end
else
  return {'noevent', 'not an event'}
end
local prev = redis.call('HGET', KEYS[3], ARGV[3])
if prev then return {'labelled', prev} end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
local args = {'XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*'}
for j = 6, #ARGV do args[#args + 1] = ARGV[j] end
redis.call(unpack(args))
return {'accepted'}
""")
