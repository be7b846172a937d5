-- Takes up to a number of messages from a key's daily quota, for a campaign's window: today's
-- count (#0 of the key's day's counts, the one `GET /me` reads and the send routes' quota checks:
-- spendMessageRate-2.lua) counted up by what is granted; the rate window (#1, #2) is not touched.
-- KEYS[1] the day's counts; KEYS[2] the day's count as kept before the bitfield (a plain counter):
-- added once, by the day's first spend, as spendMessageRate-2.lua does.
-- ARGV: daily quota (-1: none), when the day's counts expire (unix ms), messages wanted.
-- Returns the messages granted: all wanted without a quota, else at most what is left of it.

local quota = tonumber(ARGV[1])
local wanted = tonumber(ARGV[3])
local used = redis.call('BITFIELD', KEYS[1], 'GET', 'i64', '#0')[1]
local add = 0
if used == 0 then
  used = tonumber(redis.call('GET', KEYS[2]) or '0')
  add = used
end
local granted = wanted
if quota >= 0 then granted = math.max(0, math.min(wanted, quota - used)) end
add = add + granted
if add > 0 then
  local fresh = redis.call('EXISTS', KEYS[1]) == 0
  redis.call('BITFIELD', KEYS[1], 'INCRBY', 'i64', '#0', add)
  if fresh then redis.call('PEXPIREAT', KEYS[1], ARGV[2]) end
end
return granted
