-- Delivery's count against a business portfolio's messaging limit on a single Redis server, sent
-- beside the messages' claims: reads each recipient's customer-service window itself, and counts
-- the recipient (countReach) unless it is open. A turn's deliveries to one portfolio in one call.
-- KEYS: each recipient's window (`serviceWindowKey`), then, last, the portfolio's reach
-- (`portfolioReachKey`): the window keys sit on other slots, so a Cluster counts apart
-- (reachPortfolio-1.lua).
-- ARGV[1] now (ms), ARGV[2] the limit's window (ms), ARGV[3] the limit, ARGV[4] the
-- customer-service window (ms), ARGV[5..] the recipients' hashes, one per window key, in order.
-- Returns one answer per recipient: -lastInbound (ms) when their window is open (not counted);
-- 0 reached before (time refreshed); 1 added (given back by giveBackReach-1.lua if the message is
-- then not sent); else roomAt (ms), not counted.

--- @include "includes/countReach"

local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local serviceWindow = tonumber(ARGV[4])
local at = #KEYS
local reach = trimReach(at, now, window)
local answers = {}
local touched = false
for i = 1, at - 1 do
  local last = tonumber(redis.call('GET', KEYS[i]))
  if last and last + serviceWindow > now then
    answers[i] = -last
  else
    answers[i], reach = countReach(at, now, window, limit, reach, ARGV[i + 4])
    if answers[i] <= 1 then touched = true end
  end
end
if touched then redis.call('PEXPIRE', KEYS[at], window) end
return answers
