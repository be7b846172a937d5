-- Reads a business portfolio's reach without changing it (the door, under `refuse`): how many
-- recipients were reached after the cutoff, when the oldest of them was, and whether each of the
-- given recipients is among them. A turn's sends to one portfolio in one call.
-- KEYS[1] the portfolio's reach (`portfolioReachKey`).
-- ARGV[1] the cutoff (ms: now - 24 h), ARGV[2..] the recipients' hashes.
-- Returns {reach, oldest (ms, or 0 when none), per recipient when it was counted (ms), or 0...}.

local cutoff = '(' .. ARGV[1]
local answer = {redis.call('ZCOUNT', KEYS[1], cutoff, '+inf'), 0}
local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], cutoff, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if oldest[2] then answer[2] = tonumber(oldest[2]) end
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) > tonumber(ARGV[1]) then answer[#answer + 1] = tonumber(score) else answer[#answer + 1] = 0 end
end
return answer
