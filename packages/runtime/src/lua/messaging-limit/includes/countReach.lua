-- Counting one recipient in a business portfolio's reach (a sorted set: member a recipient's hash,
-- score the last time, ms, they were reached outside their window), for reachPortfolio-2.lua; its
-- reach first brought to now and its recent list folded (`reachNow`, `foldNow`:
-- includes/recentReach.lua, which this needs). `at`: the index in KEYS of the portfolio's reach.

-- Counts one recipient against `limit`, `reach` being counted now (what is left in the recent
-- list included). Answers 0 (reached before: its time refreshed), 1 (added), or roomAt (ms: when
-- the oldest counted leaves the window, not counted); and the reach after. Under the limit one
-- ZADD adds or refreshes and says which.
local function countReach(at, recentAt, now, window, limit, reach, member)
  if reach < limit then
    local added = redis.call('ZADD', KEYS[at], now, member)
    return added, reach + added
  end
  if redis.call('ZSCORE', KEYS[at], member) then
    redis.call('ZADD', KEYS[at], now, member)
    return 0, reach
  end
  return oldestReached(at, recentAt, now) + window, reach
end
