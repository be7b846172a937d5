-- A business portfolio's recent reach: a list of entries "<time ms> <recipient's hash>", appended
-- in time order while the portfolio is far from its limit (an append costs Redis about a third of
-- a sorted-set insert), folded into the exact set (`portfolioReachKey`) once the set and the list
-- together might reach it. Shared by the scripts that count, read or fold the reach; `at` is the
-- index in KEYS of the exact set, `recentAt` the list's (`portfolioRecentKey`).

--- @include "trimReach"

-- At most this many entries wait in the list: past them a portfolio is counted exactly, as near
-- its limit (Meta's largest finite tier). `RECENT_REACH_MAX` in messaging-limit.ts: the worker's
-- append without a script (reach-beside-claim.ts) keeps to it too.
local RECENT_MAX = 100000
-- At most this many entries folded in one call (a fold costs Redis about 2 µs an entry).
local FOLD_MAX = 5000

-- An entry's time (ms).
local function entryTime(entry)
  return tonumber(string.match(entry, '^%d+')) or 0
end

-- Drops from the list's head the entries that left the window (reached at `cutoff` or before);
-- answers the entries left. The head alone is read when none left.
local function trimRecent(recentAt, cutoff)
  local head = redis.call('LINDEX', KEYS[recentAt], 0)
  while head and entryTime(head) <= cutoff do
    local part = redis.call('LRANGE', KEYS[recentAt], 0, 99)
    local expired = 0
    for i = 1, #part do
      if entryTime(part[i]) <= cutoff then expired = i else break end
    end
    redis.call('LTRIM', KEYS[recentAt], expired, -1)
    head = redis.call('LINDEX', KEYS[recentAt], 0)
  end
  return redis.call('LLEN', KEYS[recentAt])
end

-- Moves up to FOLD_MAX entries from the list's head into the exact set, each recipient keeping
-- its latest time (ZADD GT); answers how many moved.
local function foldRecent(at, recentAt, window)
  local part = redis.call('LRANGE', KEYS[recentAt], 0, FOLD_MAX - 1)
  if #part == 0 then return 0 end
  local add = {}
  for i = 1, #part do
    local space = string.find(part[i], ' ', 1, true)
    if space then
      add[#add + 1] = string.sub(part[i], 1, space - 1)
      add[#add + 1] = string.sub(part[i], space + 1)
    end
    if #add >= 4000 or (i == #part and #add > 0) then
      redis.call('ZADD', KEYS[at], 'GT', unpack(add))
      add = {}
    end
  end
  redis.call('LTRIM', KEYS[recentAt], #part, -1)
  redis.call('PEXPIRE', KEYS[at], window)
  return #part
end

-- The set and the list brought to now (who left the window dropped from both): the set's size
-- and the entries the list holds.
local function reachNow(at, recentAt, now, window)
  return trimReach(at, now, window), trimRecent(recentAt, now - window)
end

-- Folds a fold's worth of the list's `recent` entries into the set: the set's size after, and the
-- entries left in the list.
local function foldNow(at, recentAt, window, recent)
  local left = recent - foldRecent(at, recentAt, window)
  return redis.call('ZCARD', KEYS[at]), left
end

-- Whether `n` more recipients may be appended without a count: the set and the list together
-- (each entry taken as a recipient of its own) stay within the limit.
local function farFromLimit(reach, recent, n, limit)
  return reach + recent + n <= limit and recent + n <= RECENT_MAX
end

-- Appends `members` (a Lua list) at `now`; the list expires a window after its last append.
local function appendRecent(recentAt, now, window, members)
  local stamp = now .. ' '
  local entries, n = {}, 0
  for j = 1, #members do
    n = n + 1
    entries[n] = stamp .. members[j]
    if n >= 4000 then
      redis.call('RPUSH', KEYS[recentAt], unpack(entries))
      entries, n = {}, 0
    end
  end
  if n > 0 then redis.call('RPUSH', KEYS[recentAt], unpack(entries, 1, n)) end
  redis.call('PEXPIRE', KEYS[recentAt], window)
end

-- The time (ms) the oldest recipient counted was reached, in the set or the list; `now` for none.
local function oldestReached(at, recentAt, now)
  local oldest = redis.call('ZRANGE', KEYS[at], 0, 0, 'WITHSCORES')
  local inSet = tonumber(oldest[2])
  local head = redis.call('LINDEX', KEYS[recentAt], 0)
  local inList = head and entryTime(head) or nil
  if inSet and inList then return math.min(inSet, inList) end
  return inSet or inList or now
end
