-- Counts recipients reached outside their customer-service window against a business portfolio's
-- messaging limit: unique recipients in a moving window (24 h). Far from the limit they are
-- appended to the portfolio's recent list, uncounted; near it the list is folded into the exact
-- set first and each recipient counted (includes/recentReach.lua). Delivery on a Redis Cluster,
-- once the gates have passed (on one server, reachBesideClaim.lua counts beside the claim).
-- KEYS[1] the portfolio's reach (`portfolioReachKey`), KEYS[2] its recent list
-- (`portfolioRecentKey`, the same slot).
-- ARGV[1] now (ms), ARGV[2] the window (ms), ARGV[3] the limit, ARGV[4..] the recipients' hashes,
-- judged in order (a turn's deliveries to one portfolio in one call).
-- Returns one answer per recipient: 0 when it may be reached (appended; already counted: its time
-- refreshed; else added while the reach is under the limit), else roomAt (ms): when the oldest
-- counted recipient leaves the window.

--- @include "includes/recentReach"
--- @include "includes/countReach"

-- The recent list's index, for the includes' calls (KEYS[recentAt]).
local recentAt = 2 -- KEYS[2]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local reach, recent = reachNow(1, recentAt, now, window)
local members = {}
for i = 4, #ARGV do members[#members + 1] = ARGV[i] end
local answers = {}
if farFromLimit(reach, recent, #members, limit) then
  appendRecent(recentAt, now, window, members)
  for j = 1, #members do answers[j] = 0 end
  return answers
end
if recent > 0 then reach, recent = foldNow(1, recentAt, window, recent) end
reach = reach + recent
local added = false
for j = 1, #members do
  local answer
  answer, reach = countReach(1, recentAt, now, window, limit, reach, members[j])
  if answer <= 1 then
    answer = 0
    added = true
  end
  answers[j] = answer
end
if added then redis.call('PEXPIRE', KEYS[1], window) end
return answers
