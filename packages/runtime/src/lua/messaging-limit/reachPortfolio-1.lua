-- Counts recipients reached outside their customer-service window against a business portfolio's
-- messaging limit: unique recipients in a moving window (24 h), one sorted set per portfolio,
-- member a recipient's hash, score the last time (ms) they were reached.
-- KEYS[1] the portfolio's reach (`portfolioReachKey`).
-- ARGV[1] now (ms), ARGV[2] the window (ms), ARGV[3] the limit, ARGV[4..] the recipients' hashes,
-- judged in order (a turn's deliveries to one portfolio in one call).
-- Returns one answer per recipient: 0 when it may be reached (already counted: its time
-- refreshed; else added while the reach is under the limit), else roomAt (ms): when the oldest
-- counted recipient leaves the window.

local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local reach = redis.call('ZCARD', KEYS[1])
local answers = {}
local added = false
for i = 4, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], now, ARGV[i])
    answers[#answers + 1] = 0
    added = true
  elseif reach < limit then
    redis.call('ZADD', KEYS[1], now, ARGV[i])
    reach = reach + 1
    answers[#answers + 1] = 0
    added = true
  else
    local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    answers[#answers + 1] = tonumber(oldest[2]) + window
  end
end
if added then redis.call('PEXPIRE', KEYS[1], window) end
return answers
