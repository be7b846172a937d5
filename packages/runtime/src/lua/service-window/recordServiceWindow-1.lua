-- Records a recipient's message in its service window's Redis copy. A message older than the one
-- recorded never moves the window back, and a window already closed is not written.
-- KEYS[1] the window (`serviceWindowKey`).
-- ARGV[1] the message's time (ms), ARGV[2] when the window closes (ms), ARGV[3] now (ms).
-- Returns 1 when written, 0 when not.

local current = redis.call('GET', KEYS[1])
if current and tonumber(current) >= tonumber(ARGV[1]) then return 0 end
if tonumber(ARGV[2]) <= tonumber(ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])
return 1
