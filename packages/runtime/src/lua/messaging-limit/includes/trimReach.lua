-- A business portfolio's reach (a sorted set: member a recipient's hash, score the last time, ms,
-- they were reached outside their window) brought to now, for `reachNow` (includes/recentReach.lua).
-- `at`: the index in KEYS of the portfolio's reach.

-- Drops who left the window (reached `window` ms ago or more); answers the reach left.
local function trimReach(at, now, window)
  redis.call('ZREMRANGEBYSCORE', KEYS[at], '-inf', now - window)
  return redis.call('ZCARD', KEYS[at])
end
