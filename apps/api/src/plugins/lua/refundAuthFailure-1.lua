-- Takes back one counted failed authentication, if the window still holds any (never below 0,
-- never a key without TTL).
-- KEYS[1] the address's count. No ARGV.
-- Returns the count left.

local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count > 0 then return redis.call('DECR', KEYS[1]) end
return 0
