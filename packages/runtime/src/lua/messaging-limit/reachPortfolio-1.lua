-- Counts one recipient reached outside their customer-service window against a business
-- portfolio's messaging limit: unique recipients in a moving window (24 h), one sorted set per
-- portfolio, member the recipient's hash, score the last time (ms) they were reached.
-- KEYS[1] the portfolio's reach (`portfolioReachKey`).
-- ARGV[1] the recipient's hash, ARGV[2] now (ms), ARGV[3] the window (ms), ARGV[4] the limit.
-- Returns {1, reach} when the recipient may be reached (already counted: their time refreshed;
-- else added while the reach is under the limit), {0, roomAt} when the portfolio is at its limit:
-- roomAt (ms) is when the oldest counted recipient leaves the window.

local now = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, redis.call('ZCARD', KEYS[1])}
end
local reach = redis.call('ZCARD', KEYS[1])
if reach < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[1], now, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, reach + 1}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, tonumber(oldest[2]) + window}
