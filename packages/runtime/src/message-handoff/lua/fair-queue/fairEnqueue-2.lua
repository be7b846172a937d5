-- The API's side of fair admission (docs/senders.md): one call stores several messages of one sender
-- (a batch, or the sends one turn of the event loop gathered) with one HSET, and queues each
-- (level, key)'s ids with one RPUSH, that key joining its level's ring when its list was empty; a
-- scheduled message goes to `scheduled` instead, and to its key's own `sched:<apiKeyId>` set beside it.
-- The ids keep their order within each key's list.
--
-- The outstanding bound (MESSAGE_OUTSTANDING_MAX): a key's messages waiting on this sender (its three
-- level lists) plus its scheduled ones not yet due are counted here, in the same call, so the bound
-- costs no round trip. A message that would take the count past ARGV[2] is not stored; its index
-- (0-based, in the call's order) is returned. Only the key's scheduled messages not yet due are
-- counted (ZCOUNT from now), and what is past due is dropped when the set next grows, so a message
-- leaving `scheduled` another way (an erasure) is never counted for longer than its time.
--
-- KEYS[1] jobs, KEYS[2] scheduled (fairKeys).
-- ARGV: fairBase, the bound per key (0: none), now (ms), then per message: id, job JSON, level,
-- apiKeyId, due time in ms (0: now). At most FAIR_ENQUEUE_MAX messages (`unpack` has a stack limit).
-- The per-key lists, sets and rings are named from ARGV[1] (fairBase): which ones a call touches is
-- known only inside it, and all share the sender's `{…}` hash tag, so one slot.
-- Returns the indexes of the messages refused (none: an empty array).

local base = ARGV[1]
local bound, now = tonumber(ARGV[2]), tonumber(ARGV[3])
local fields, lists, order, counts, refused = {}, {}, {}, {}, {}
for i = 4, #ARGV, 5 do
  local id, level, key, due = ARGV[i], ARGV[i + 2], ARGV[i + 3], tonumber(ARGV[i + 4])
  local stored = true
  if bound > 0 then
    local count = counts[key]
    if not count then
      local k = base .. 'key:'
      count = redis.call('LLEN', k .. 'high:' .. key) + redis.call('LLEN', k .. 'normal:' .. key)
        + redis.call('LLEN', k .. 'low:' .. key) + redis.call('ZCOUNT', base .. 'sched:' .. key, now, '+inf')
    end
    if count >= bound then
      stored = false
      refused[#refused + 1] = (i - 4) / 5
    else
      count = count + 1
    end
    counts[key] = count
  end
  if stored then
    fields[#fields + 1] = id
    fields[#fields + 1] = ARGV[i + 1]
    if due > 0 then
      redis.call('ZADD', KEYS[2], due, id)
      -- What is past due left the set another way (an erasure): dropped here, where the set grows.
      redis.call('ZREMRANGEBYSCORE', base .. 'sched:' .. key, '-inf', now)
      redis.call('ZADD', base .. 'sched:' .. key, due, id)
    else
      local name = level .. ':' .. key
      local list = lists[name]
      if not list then
        list = {level = level, key = key, ids = {}}
        lists[name] = list
        order[#order + 1] = name
      end
      list.ids[#list.ids + 1] = id
    end
  end
end
if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
for _, name in ipairs(order) do
  local list = lists[name]
  if redis.call('RPUSH', base .. 'key:' .. name, unpack(list.ids)) == #list.ids then
    redis.call('RPUSH', base .. 'ring:' .. list.level, list.key)
  end
end
return refused
