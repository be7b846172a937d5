-- One counter per webhook endpoint for its manual retries, in a window that starts at the first and
-- lasts ARGV[2] (shared by every API instance). A retry past the bound counts nothing.
-- KEYS[1] the endpoint's counter.
-- ARGV[1] the bound, ARGV[2] the window (ms).
-- Returns 0 (let in) or the window's ms left.

local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then
  local left = redis.call('PTTL', KEYS[1])
  if left < 1 then left = 1 end
  return left
end
if redis.call('INCR', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
