-- Leases to deliver to one webhook endpoint, within its concurrency and its rate per second.
-- Everything is timed by the Redis server's clock, so workers on machines whose clocks differ still
-- agree. In order: the leases this process released since its last call go first; a pause refuses
-- for the rest of it; expired leases (those of a worker that died holding them) are dropped, and no
-- free lease refuses; a second whose rate is used up refuses until it ends. Otherwise as many of the
-- k asked for as are free and left in the second are granted (the first tokens), and the second's
-- count raised by that many, so a refusal costs nothing. Every key expires on its own: the pause
-- with itself, the leases with the last one, the count at the end of its second.
-- KEYS[1] the endpoint's leases, KEYS[2] its count of the second, KEYS[3] its pause.
-- ARGV[1] concurrency, ARGV[2] rate per second, ARGV[3] lease ms, ARGV[4] how many leases are asked
-- for (k), ARGV[5] to ARGV[4 + k] their tokens, then the leases released.
-- Returns {granted, wait ms, reason}.

local k = tonumber(ARGV[4])
if #ARGV > 4 + k then redis.call('ZREM', KEYS[1], unpack(ARGV, 5 + k)) end
local pause = redis.call('PTTL', KEYS[3])
if pause > 0 then return {0, pause, 'paused'} end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local free = tonumber(ARGV[1]) - redis.call('ZCARD', KEYS[1])
if free <= 0 then return {0, 0, 'concurrency'} end
local second_ends = (tonumber(time[1]) + 1) * 1000
local left = tonumber(ARGV[2]) - tonumber(redis.call('GET', KEYS[2]) or '0')
if left <= 0 then return {0, second_ends - now, 'rate'} end
local g = math.min(k, free, left)
redis.call('INCRBY', KEYS[2], g)
redis.call('PEXPIREAT', KEYS[2], second_ends)
local expiry = now + tonumber(ARGV[3])
for i = 5, 4 + g do redis.call('ZADD', KEYS[1], expiry, ARGV[i]) end
local latest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], latest[2])
return {g, 0, 'ok'}
