import type { MessagePriority } from '@dispatch/contracts'

/**
 * Fair admission (docs/senders.md). The API does not add a
 * message to its sender's BullMQ queue: it stores the job in the sender's `jobs` hash and its id at
 * the tail of a list per (priority level, key), and puts the key on the level's ring when that list
 * was empty. A worker's admitter then moves about one window of the sender's rate at a time into the
 * sender's queue, taking one message per key in turn round the ring (round-robin, the equal-weight
 * case of deficit round-robin), every `high` before any `normal` before any `low`. So a key with a
 * 100,000-message backlog holds at most its turn, never the queue, and the cost is O(1) per message
 * whatever the number of keys.
 *
 * Every key of one sender shares the `{…}` hash tag of `fairBase`, so the scripts stay on one slot.
 */
export const fairBase = (prefix: string, senderId: string) => `${prefix}:fair:{${senderId}}:`

export const fairKeys = (prefix: string, senderId: string) => {
  const base = fairBase(prefix, senderId)
  return {
    base,
    /** messageId → job JSON, until admitted. */
    jobs: `${base}jobs`,
    /** messageId → job JSON, taken by an admitter and not yet confirmed in the sender's queue. */
    moving: `${base}moving`,
    /** messageId → when it was taken (ms): an admitter that died leaves them to be taken again. */
    movingAt: `${base}moving-at`,
    /** messageId → due time (ms), for scheduled messages. */
    scheduled: `${base}scheduled`,
    /** messageId → the id of the bundle job holding it (message-bundles.ts), until its outcome is recorded. */
    bundled: `${base}bundled`,
    /** Stream of `sent` outcomes not yet written to Postgres (the worker's sent log). */
    sentLog: `${base}sent-log`,
    /** The sender's pace: `tokens` (messages it may still be sent now) and `at` (ms), see FAIR_ADMIT_SCRIPT. */
    pace: `${base}pace`,
    ring: (level: MessagePriority) => `${base}ring:${level}`,
    list: (level: MessagePriority, apiKeyId: string) => `${base}key:${level}:${apiKeyId}`,
  }
}

/** Senders with messages waiting for admission (a hint: admitters also sweep every sender). */
export const fairActiveKey = (prefix: string) => `${prefix}:fair:active`

/** The sender's queue priority of each level: lower goes first. */
export const PRIORITY_RANK: Record<MessagePriority, number> = { high: 1, normal: 2, low: 3 }

/** The most messages one FAIR_ENQUEUE_SCRIPT call takes (Lua's `unpack` has a stack limit). */
export const FAIR_ENQUEUE_MAX = 500

/**
 * The API's side: one call stores several messages of one sender (a batch, or the sends one turn of
 * the event loop gathered) with one HSET, and queues each (level, key)'s ids with one RPUSH, that key
 * joining its level's ring when its list was empty; a scheduled message goes to `scheduled` instead,
 * and to its key's own `sched:<apiKeyId>` set beside it.
 * The ids keep their order within each key's list.
 *
 * The outstanding bound (MESSAGE_OUTSTANDING_MAX): a key's messages waiting on this sender (its three
 * level lists) plus its scheduled ones not yet due are counted here, in the same call, so the bound
 * costs no round trip. A message that would take the count past ARGV[2] is not stored; its index
 * (0-based, in the call's order) is returned. Only the key's scheduled messages not yet due are
 * counted (ZCOUNT from now), and what is past due is dropped when the set next grows, so a message
 * leaving `scheduled` another way (an erasure) is never counted for longer than its time.
 * KEYS: jobs, scheduled. ARGV: fairBase, the bound per key (0: none), now (ms), then per message: id,
 * job JSON, level, apiKeyId, due time in ms (0: now).
 * Returns the indexes of the messages refused (none: an empty array).
 */
export const FAIR_ENQUEUE_SCRIPT = `
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
return refused`

/**
 * How the admitter adds one tick's messages to the sender's queue (the script's second answer).
 * BullMQ takes its plain wait list before its prioritized set, so a plain add is a priority above
 * every ranked one, and costs 3 Redis commands less per message:
 * - `plain`: every message of the tick is of one level, nothing is prioritized in the queue and its
 *   wait list is empty or holds that level only: no BullMQ priority is needed to keep the order;
 * - `ranked`: levels mix; each message gets its level's BullMQ priority (PRIORITY_RANK);
 * - `jump`: the tick's first `jumpCount` messages are of a level above the plain ones already
 *   waiting (a `high` arriving during a `normal` flood): they go to the front of the wait list
 *   (BullMQ's `lifo`, added in reverse so they keep their order), the rest ranked.
 */
export const ADMIT_MODE = { ranked: 0, plain: 1, jump: 2 } as const

/**
 * The admitter's side, one round trip per sender and tick:
 * 1. due scheduled messages join their key's list;
 * 2. messages taken more than ARGV[5] ms ago and never confirmed are handed out again;
 * 3. while the sender's queue holds fewer than ARGV[2] jobs (and is neither paused nor rate
 *    limited by the platform, its BullMQ limiter key alive), up to ARGV[3] messages, and no more
 *    than its pace allows, are taken round each level's ring: each key in turn gives an equal share of what is
 *    left of the budget (one message when keys outnumber it), and the shares are interleaved one
 *    message per key, so the order is the one-per-key round-robin's. The per-message work is a few
 *    commands per key and turn, not per message: one LPOP of the share, one HMGET, HDEL, HSET and
 *    ZADD for the whole tick.
 * 4. how to add them (ADMIT_MODE), from the queue's wait list and prioritized set and the level of
 *    the plain jobs waiting (`plain`: set while a plain level is in use; `jump`: the last message
 *    moved to the front, so a second jump never overtakes the first while it waits, as its own job
 *    or in its bundle's, found by the `bundled` index).
 * 5. the pace: the sender's rate is kept here, not by BullMQ's limiter (which costs three commands
 *    on every job). A token bucket in `pace`, on Redis' clock so every admitter shares it: it fills
 *    at ARGV[6] messages a second up to one window of them (ARGV[2]), each admitted message takes
 *    one, and a worker takes one for each retry it causes (`spendPace`). So the platform sees at
 *    most a window's burst and then the rate, however many processes admit and deliver.
 * KEYS: jobs, moving, movingAt, scheduled, the queue's wait, prioritized, meta and limiter keys.
 * ARGV: now (ms), target depth, most per call, fairBase, stale after (ms), rate per second.
 * Returns {work left (0/1), mode, jumpCount, id1, json1, id2, json2, …}.
 */
export const FAIR_ADMIT_SCRIPT = `
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
local out = {0, 0, 0}
local stale = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - tonumber(ARGV[5]), 'LIMIT', 0, 1000)
for _, id in ipairs(stale) do
  local json = redis.call('HGET', KEYS[2], id)
  if json then
    redis.call('ZADD', KEYS[3], now, id)
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
return out`
