import type { MessagePriority } from './messages.ts'

/**
 * Fair admission (docs/messaging.md, "Senders, fairness and priority"). The API does not add a
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
    ring: (level: MessagePriority) => `${base}ring:${level}`,
    list: (level: MessagePriority, apiKeyId: string) => `${base}key:${level}:${apiKeyId}`,
  }
}

/** Senders with messages waiting for admission (a hint: admitters also sweep every sender). */
export const fairActiveKey = (prefix: string) => `${prefix}:fair:active`

/** The sender's queue priority of each level: lower goes first. */
export const PRIORITY_RANK: Record<MessagePriority, number> = { high: 1, normal: 2, low: 3 }

/**
 * The API's side, one round trip per message: store the job and queue its id.
 * KEYS: jobs, the key's list for its level, that level's ring, scheduled.
 * ARGV: messageId, job JSON, apiKeyId, due time in ms (0: now).
 */
export const FAIR_ENQUEUE_SCRIPT = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if tonumber(ARGV[4]) > 0 then
  redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
elseif redis.call('RPUSH', KEYS[2], ARGV[1]) == 1 then
  redis.call('RPUSH', KEYS[3], ARGV[3])
end
return 1`

/**
 * The admitter's side, one round trip per sender and tick:
 * 1. due scheduled messages join their key's list;
 * 2. messages taken more than ARGV[5] ms ago and never confirmed are handed out again;
 * 3. while the sender's queue holds fewer than ARGV[2] jobs (and is not paused), up to ARGV[3]
 *    messages are taken round each level's ring, one per key per turn.
 * KEYS: jobs, moving, movingAt, scheduled, the queue's wait, prioritized and meta keys.
 * ARGV: now (ms), target depth, most per call, fairBase, stale after (ms).
 * Returns {work left (0/1), id1, json1, id2, json2, …}.
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
    if redis.call('RPUSH', base .. 'key:' .. level .. ':' .. job.apiKeyId, id) == 1 then
      redis.call('RPUSH', base .. 'ring:' .. level, job.apiKeyId)
    end
  end
end
local out = {0}
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
if redis.call('HEXISTS', KEYS[7], 'paused') == 0 then
  local waiting = redis.call('LLEN', KEYS[5]) + redis.call('ZCARD', KEYS[6]) + redis.call('ZCARD', KEYS[3])
  budget = math.min(tonumber(ARGV[3]), tonumber(ARGV[2]) - waiting)
end
local left = 0
for _, level in ipairs({'high', 'normal', 'low'}) do
  local ring = base .. 'ring:' .. level
  while budget > 0 do
    local key = redis.call('LMOVE', ring, ring, 'LEFT', 'RIGHT')
    if not key then break end
    local list = base .. 'key:' .. level .. ':' .. key
    local id = redis.call('LPOP', list)
    if redis.call('LLEN', list) == 0 then redis.call('RPOP', ring) end
    if id then
      local json = redis.call('HGET', KEYS[1], id)
      if json then
        redis.call('HDEL', KEYS[1], id)
        redis.call('HSET', KEYS[2], id, json)
        redis.call('ZADD', KEYS[3], now, id)
        out[#out + 1] = id
        out[#out + 1] = json
        budget = budget - 1
      end
    end
  end
  left = left + redis.call('LLEN', ring)
end
if left > 0 or redis.call('ZCARD', KEYS[4]) > 0 or redis.call('ZCARD', KEYS[3]) > 0 then out[1] = 1 end
return out`
