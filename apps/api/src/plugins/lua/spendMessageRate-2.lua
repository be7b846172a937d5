-- A key's daily quota, then its rate, in one round trip, for every request of one key in a turn of
-- the event loop (in order), and on the path of most turns in one command: a key's counts of one UTC
-- day are one bitfield of three signed 64-bit integers (#0 today's messages, #1 the rate window's,
-- #2 when the window ends, unix ms on the API's clock), counted up together by one BITFIELD that
-- also reads the window's end. When every request of the turn is let in inside the window, that is
-- all; otherwise (a new window, a request past a bound) one more BITFIELD writes what the requests,
-- taken one after another, leave. The rules: message-rate-limit.ts. A refused request counts
-- nothing: it leaves the counts as they were before it.
-- KEYS[1] the day's counts; KEYS[2] the day's count as kept before the bitfield (a plain counter):
-- added once, by the day's first request, so an upgrade mid-day keeps what was counted.
-- ARGV: rate limit, window ms, daily quota (-1: none), when the day's counts expire (unix ms), now
-- (unix ms), then each request's count.
-- Returns two numbers per request: 1, 0 let in; 0, ms until the window ends over the rate; 2,
-- today's count over the quota.

local limit = tonumber(ARGV[1])
local quota = tonumber(ARGV[3])
local now = tonumber(ARGV[5])
local total = 0
for i = 6, #ARGV do total = total + tonumber(ARGV[i]) end
local read = redis.call('BITFIELD', KEYS[1], 'INCRBY', 'i64', '#0', total, 'INCRBY', 'i64', '#1', total, 'GET', 'i64', '#2')
local stored = {read[1], read[2], read[3]}
local used, n, ends = read[1] - total, read[2] - total, read[3]
if used == 0 then
  redis.call('PEXPIREAT', KEYS[1], ARGV[4])
  local before = tonumber(redis.call('GET', KEYS[2]) or '0')
  if before > 0 then
    stored[1] = redis.call('BITFIELD', KEYS[1], 'INCRBY', 'i64', '#0', before)[1]
    used = used + before
  end
end
local out = {}
for i = 6, #ARGV do
  local count = tonumber(ARGV[i])
  local m = n + count
  if now >= ends then m = count end
  local before = m - count
  if quota >= 0 and used + count > quota then
    n = before
    out[#out + 1] = 2
    out[#out + 1] = used
  elseif before >= limit then
    n = before
    out[#out + 1] = 0
    out[#out + 1] = ends - now
  else
    used = used + count
    n = m
    if before == 0 or m > limit then ends = now + tonumber(ARGV[2]) * math.ceil(m / limit) end
    out[#out + 1] = 1
    out[#out + 1] = 0
  end
end
local set = {}
if used ~= stored[1] then table.insert(set, 'SET'); table.insert(set, 'i64'); table.insert(set, '#0'); table.insert(set, used) end
if n ~= stored[2] then table.insert(set, 'SET'); table.insert(set, 'i64'); table.insert(set, '#1'); table.insert(set, n) end
if ends ~= stored[3] then table.insert(set, 'SET'); table.insert(set, 'i64'); table.insert(set, '#2'); table.insert(set, ends) end
if #set > 0 then redis.call('BITFIELD', KEYS[1], unpack(set)) end
return out
