-- Reads a business portfolio's reach for the door (under `refuse`): how many recipients were
-- reached after the cutoff, when the oldest of them was, and whether each of the given recipients
-- is among them. Near the limit (the set, the recent list and these recipients together past it)
-- what waits in the list is folded into the exact set first (includes/recentReach.lua), so a
-- recipient appended far from the limit is found; far from it nothing is folded (the door reads
-- once a second then), and the list's entries count in the reach, each as a recipient. A turn's
-- sends to one portfolio in one call.
-- KEYS[1] the portfolio's reach (`portfolioReachKey`), KEYS[2] its recent list
-- (`portfolioRecentKey`). ARGV[1] the cutoff (ms: now - 24 h), ARGV[2] the window (ms), ARGV[3]
-- the limit, ARGV[4..] the recipients' hashes.
-- Returns {reach, oldest (ms, or 0 when none), per recipient when it was counted (ms), or 0...}.

--- @include "includes/recentReach"

local cutoff = tonumber(ARGV[1])
local after = '(' .. ARGV[1]
local recent = trimRecent(2, cutoff)
local inSet = redis.call('ZCOUNT', KEYS[1], after, '+inf')
if recent > 0 and inSet + recent + #ARGV - 3 > tonumber(ARGV[3]) then
  recent = recent - foldRecent(1, 2, tonumber(ARGV[2]))
  inSet = redis.call('ZCOUNT', KEYS[1], after, '+inf')
end
local answer = {inSet + recent, 0}
local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], after, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local head = recent > 0 and redis.call('LINDEX', KEYS[2], 0)
local oldestInSet, oldestInList = tonumber(oldest[2]), head and entryTime(head) or nil
if oldestInSet and oldestInList then
  answer[2] = math.min(oldestInSet, oldestInList)
else
  answer[2] = oldestInSet or oldestInList or 0
end
for i = 4, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) > cutoff then answer[#answer + 1] = tonumber(score) else answer[#answer + 1] = 0 end
end
return answer
