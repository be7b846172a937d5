-- The admitter's side of fair admission, one round trip per sender and tick:
-- 1. due scheduled messages join their key's list;
-- 2. messages taken more than ARGV[5] ms ago and never confirmed are handed out again;
-- 3. while the sender's queue holds fewer than ARGV[2] jobs (and is neither paused nor rate
--    limited by the platform, its BullMQ limiter key alive), up to ARGV[3] messages, and no more
--    than its pace allows, are taken round each level's ring: each key in turn gives an equal share
--    of what is left of the budget (one message when keys outnumber it), and the shares are
--    interleaved one message per key, so the order is the one-per-key round-robin's. The
--    per-message work is a few commands per key and turn, not per message: one LPOP of the share,
--    one HMGET, HDEL, HSET and ZADD for the whole tick.
-- 4. how to add them (ADMIT_MODE in fair-queue.ts), from the queue's wait list and prioritized set
--    and the level of the plain jobs waiting (`plain`: set while a plain level is in use; `jump`: the
--    last message moved to the front, so a second jump never overtakes the first while it waits, as
--    its own job or in its bundle's, found by the `bundled` index).
-- 5. the pace: the sender's rate is kept here, not by BullMQ's limiter (which costs three commands
--    on every job). A token bucket in `pace`, on Redis' clock so every admitter shares it: it fills
--    at ARGV[6] messages a second up to one window of them (ARGV[2]), each admitted message takes
--    one, and a worker takes one for each retry it causes (`spendPace`). So the platform sees at
--    most a window's burst and then the rate, however many processes admit and deliver.
--
-- KEYS[1] jobs, KEYS[2] moving, KEYS[3] movingAt, KEYS[4] scheduled (fairKeys), then the sender
-- queue's BullMQ keys: KEYS[5] wait, KEYS[6] prioritized, KEYS[7] meta, KEYS[8] limiter.
-- ARGV: now (ms), target depth, most per call, fairBase, stale after (ms), rate per second.
-- The rings, per-key lists and sets, `pace`, `plain`, `jump` and `bundled` are named from ARGV[4]
-- (fairBase): which keys a tick visits is read from the rings inside the call, and all share the
-- sender's `{…}` hash tag (as its queue's keys do), so one slot.
-- Returns {work left (0/1), mode, jumpCount, staleCount, id1, json1, id2, json2, …}: the first
-- staleCount pairs are handed out again (step 2), the rest taken now.

local now = tonumber(ARGV[1])
local base = ARGV[4]
local due = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, 1000)
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[4], id)
  local json = redis.call('HGET', KEYS[1], id)
  if json then
    local job = cjson.decode(json)
    local level = job.priority or 'normal'
    redis.call('ZREM', base .. 'sched:' .. job.apiKeyId, id)
    if redis.call('RPUSH', base .. 'key:' .. level .. ':' .. job.apiKeyId, id) == 1 then
      redis.call('RPUSH', base .. 'ring:' .. level, job.apiKeyId)
    end
  end
end
local out = {0, 0, 0, 0}
local stale = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[5]), 'LIMIT', 0, 1000)
for _, id in ipairs(stale) do
  local json = redis.call('HGET', KEYS[2], id)
  if json then
    redis.call('ZADD', KEYS[3], now, id)
    out[4] = out[4] + 1
    out[#out + 1] = id
    out[#out + 1] = json
  else
    redis.call('ZREM', KEYS[3], id)
  end
end
local budget = 0
local waiting, prioritized = 0, 0
local pace, tokens, clock = base .. 'pace', 0, 0
if redis.call('HEXISTS', KEYS[7], 'paused') == 0 and redis.call('PTTL', KEYS[8]) <= 0 then
  waiting = redis.call('LLEN', KEYS[5])
  prioritized = redis.call('ZCARD', KEYS[6])
  budget = math.min(tonumber(ARGV[3]), tonumber(ARGV[2]) - waiting - prioritized - redis.call('ZCARD', KEYS[3]))
  if budget > 0 then
    local time = redis.call('TIME')
    clock = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    local state = redis.call('HMGET', pace, 'tokens', 'at')
    local cap = tonumber(ARGV[2])
    tokens = tonumber(state[1]) or cap
    local since = math.max(0, clock - (tonumber(state[2]) or clock))
    tokens = math.min(cap, tokens + since * tonumber(ARGV[6]) / 1000)
    budget = math.min(budget, math.floor(tokens))
  end
end
local ids, levels = {}, {}
local left = 0
for _, level in ipairs({'high', 'normal', 'low'}) do
  local ring = base .. 'ring:' .. level
  while budget > 0 do
    local keys = redis.call('LLEN', ring)
    if keys == 0 then break end
    local share = math.max(1, math.floor(budget / keys))
    local shares, longest = {}, 0
    for _ = 1, math.min(keys, budget) do
      local key = redis.call('LMOVE', ring, ring, 'LEFT', 'RIGHT')
      local list = base .. 'key:' .. level .. ':' .. key
      local popped = redis.call('LPOP', list, share) or {}
      if #popped < share or redis.call('LLEN', list) == 0 then redis.call('RPOP', ring) end
      shares[#shares + 1] = popped
      if #popped > longest then longest = #popped end
      budget = budget - #popped
    end
    for i = 1, longest do
      for _, popped in ipairs(shares) do
        if popped[i] then
          ids[#ids + 1] = popped[i]
          levels[#ids] = level
        end
      end
    end
  end
  left = left + redis.call('LLEN', ring)
end
if #ids > 0 then
  local jsons = redis.call('HMGET', KEYS[1], unpack(ids))
  local moved, at, found, kept = {}, {}, {}, {}
  for i, id in ipairs(ids) do
    local json = jsons[i]
    if json then
      moved[#moved + 1] = id
      moved[#moved + 1] = json
      at[#at + 1] = now
      at[#at + 1] = id
      found[#found + 1] = id
      kept[#found] = levels[i]
    end
  end
  if #found > 0 then
    redis.call('HSET', pace, 'tokens', tostring(tokens - #found), 'at', clock)
    redis.call('HDEL', KEYS[1], unpack(found))
    redis.call('HSET', KEYS[2], unpack(moved))
    redis.call('ZADD', KEYS[3], unpack(at))
    -- How to add them: see ADMIT_MODE.
    local top, single, topCount = kept[1], true, 0
    for i = 1, #found do
      if kept[i] ~= top then single = false elseif single then topCount = i end
    end
    local plainKey = base .. 'plain'
    local plainLevel = waiting > 0 and redis.call('GET', plainKey) or false
    local rank = {high = 1, normal = 2, low = 3}
    if #stale == 0 and prioritized == 0 then
      if single and (not plainLevel or plainLevel == top) then
        out[2] = 1
        if plainLevel ~= top then redis.call('SET', plainKey, top) end
      elseif plainLevel and rank[top] < rank[plainLevel] then
        -- The last jumper waits in the wait list as its own job or in its bundle's (the index).
        local last = redis.call('GET', base .. 'jump')
        local lastJob = last and (redis.call('HGET', base .. 'bundled', last) or last)
        if not last or (not redis.call('LPOS', KEYS[5], lastJob) and not redis.call('ZSCORE', KEYS[3], last)) then
          out[2] = 2
          out[3] = topCount
          redis.call('SET', base .. 'jump', found[topCount])
        end
      end
    end
    for i, id in ipairs(found) do
      out[#out + 1] = id
      out[#out + 1] = moved[2 * i]
    end
  end
end
if left > 0 or redis.call('ZCARD', KEYS[4]) > 0 or redis.call('ZCARD', KEYS[3]) > 0 then out[1] = 1 end
return out
