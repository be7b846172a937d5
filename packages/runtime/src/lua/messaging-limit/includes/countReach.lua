-- Counting one recipient in a business portfolio's reach (a sorted set: member a recipient's hash,
-- score the last time, ms, they were reached outside their window), for reachPortfolio-1.lua; its
-- reach first brought to now by trimReach (includes/trimReach.lua). `at`: the index in KEYS of the
-- portfolio's reach.

-- Counts one recipient against `limit`, `reach` being counted now. Answers 0 (reached before: its
-- time refreshed), 1 (added), or roomAt (ms: when the oldest counted leaves the window, not
-- counted); and the reach after. Under the limit one ZADD adds or refreshes and says which.
local function countReach(at, now, window, limit, reach, member)
  if reach < limit then
    local added = redis.call('ZADD', KEYS[at], now, member)
    return added, reach + added
  end
  if redis.call('ZSCORE', KEYS[at], member) then
    redis.call('ZADD', KEYS[at], now, member)
    return 0, reach
  end
  local oldest = redis.call('ZRANGE', KEYS[at], 0, 0, 'WITHSCORES')
  return tonumber(oldest[2]) + window, reach
end
