-- Takes one message out of a sender's fair-admission lists if it is still waiting there, into
-- `moving` (as fairAdmit does), where a status lookup still finds it and from which the admitter
-- hands it out again should this process die before recording it: never lost, never a 404 while it
-- is being recorded. fairAdmit takes it whole or not at all, so exactly one of them gets it. Its id
-- may stay in its key's list: fairAdmit skips an id whose job is gone.
-- KEYS[1] jobs, KEYS[2] scheduled, KEYS[3] moving, KEYS[4] movingAt (fairKeys).
-- ARGV[1] the message id, ARGV[2] now (ms).
-- Returns the job's JSON, or nil.

local json = redis.call('HGET', KEYS[1], ARGV[1])
if not json then return nil end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], json)
redis.call('ZADD', KEYS[4], ARGV[2], ARGV[1])
return json
