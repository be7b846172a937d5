-- Extends a webhook endpoint's pause to ARGV[1] ms from now unless it already lasts longer.
-- KEYS[1] the endpoint's pause. ARGV[1] the pause (ms).
-- Returns the pause in force (ms).

local left = redis.call('PTTL', KEYS[1])
local ms = tonumber(ARGV[1])
if left >= ms then return left end
redis.call('SET', KEYS[1], '1', 'PX', ms)
return ms
