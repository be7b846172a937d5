-- The key's webhook replays running now, as a set of replay tags scored by their start (ms): one
-- that started more than ARGV[3] ms ago is forgotten (its instance died before it ended).
-- KEYS[1] the key's set.
-- ARGV[1] the bound, ARGV[2] now (ms), ARGV[3] stale after (ms), ARGV[4] this replay's tag.
-- Returns 1 when this replay may run (and is counted), 0 when the key is at its bound.

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[3]))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
