-- Releases a lock only while it still holds this holder's token (one that expired and was taken by
-- another stays theirs).
-- KEYS[1] the lock. ARGV[1] the holder's token.
-- Returns 1 released, 0 not.

if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
