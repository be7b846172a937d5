-- Failed authentications of one address, a fixed window in one atomic step: an address already at
-- the limit is blocked (the reply is the window's remaining milliseconds) whatever this request's
-- outcome, so being blocked says nothing about the credential; otherwise a failure is counted, the
-- first one opening the window.
-- KEYS[1] the address's count.
-- ARGV[1] '1' to count a failure ('0': only look), ARGV[2] the limit, ARGV[3] the window (ms).
-- Returns {1, ms left} blocked, or {0, the count}.

local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count >= tonumber(ARGV[2]) then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    ttl = tonumber(ARGV[3])
  end
  return {1, ttl}
end
if ARGV[1] == '1' then
  count = redis.call('INCR', KEYS[1])
  if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
end
return {0, count}
