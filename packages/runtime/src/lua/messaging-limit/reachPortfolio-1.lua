-- Counts recipients reached outside their customer-service window against a business portfolio's
-- messaging limit: unique recipients in a moving window (24 h), one sorted set per portfolio,
-- member a recipient's hash, score the last time (ms) they were reached. Delivery on a Redis
-- Cluster, once the gates have passed (on one server, reachBesideClaim.lua counts beside the claim).
-- KEYS[1] the portfolio's reach (`portfolioReachKey`).
-- ARGV[1] now (ms), ARGV[2] the window (ms), ARGV[3] the limit, ARGV[4..] the recipients' hashes,
-- judged in order (a turn's deliveries to one portfolio in one call).
-- Returns one answer per recipient: 0 when it may be reached (already counted: its time
-- refreshed; else added while the reach is under the limit), else roomAt (ms): when the oldest
-- counted recipient leaves the window.

--- @include "includes/trimReach"
--- @include "includes/countReach"

local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local reach = trimReach(1, now, window)
local answers = {}
local added = false
for i = 4, #ARGV do
  local answer
  answer, reach = countReach(1, now, window, limit, reach, ARGV[i])
  if answer <= 1 then
    answer = 0
    added = true
  end
  answers[#answers + 1] = answer
end
if added then redis.call('PEXPIRE', KEYS[1], window) end
return answers
