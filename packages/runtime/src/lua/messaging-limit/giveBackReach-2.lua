-- Gives back recipients that reachBesideClaim.lua added to a portfolio's reach for messages then
-- not sent (their claim held elsewhere or canceled, a gate stopping them): each is removed from the
-- exact set only while its time is still the one it was counted at (no delivery has reached it
-- since), or its entry of that time from the recent list (looked for from the tail, where it was
-- appended).
-- KEYS[1] the portfolio's reach, KEYS[2] its recent list. ARGV[1] the time (ms) they were counted
-- at, ARGV[2..] their hashes.
-- Returns how many were removed.

local at = tonumber(ARGV[1])
local removed = 0
for i = 2, #ARGV do
  if tonumber(redis.call('ZSCORE', KEYS[1], ARGV[i])) == at then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  else
    removed = removed + redis.call('LREM', KEYS[2], -1, ARGV[1] .. ' ' .. ARGV[i])
  end
end
return removed
