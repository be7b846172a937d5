-- Delivery's count against a business portfolio's messaging limit on a single Redis server, sent
-- beside the messages' claims: reads each recipient's customer-service window itself, and counts
-- the recipients whose window is not open. A turn's deliveries to one portfolio in one call, in a
-- fixed number of commands whatever their number.
-- Far from the limit (the exact set and the recent list together, each entry taken as a recipient
-- of its own, stay within it) the recipients are appended to the recent list, uncounted; near it
-- the list is folded into the set first and each recipient counted exactly
-- (includes/recentReach.lua).
-- KEYS: each recipient's window (`serviceWindowKey`), then, last, the portfolio's reach
-- (`portfolioReachKey`) and its recent list (`portfolioRecentKey`): the window keys sit on other
-- slots, so a Cluster counts apart (reachPortfolio-2.lua).
-- ARGV[1] now (ms), ARGV[2] the limit's window (ms), ARGV[3] the limit, ARGV[4] the
-- customer-service window (ms), ARGV[5..] the recipients' hashes, one per window key, in order.
-- Returns one answer per recipient: -lastInbound (ms) when their window is open (not counted);
-- 0 reached before (time refreshed); 1 added, to the list or the set (given back by
-- giveBackReach-2.lua if the message is then not sent); else roomAt (ms), not counted. A
-- recipient twice in one call: added once, then reached before (far from the limit: appended
-- twice, each answered 1). Every recipient appended (far from the limit, no window open): the
-- single number 1 instead of a list of them.

--- @include "includes/recentReach"

local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local serviceWindow = tonumber(ARGV[4])
local recentAt = #KEYS
local at = #KEYS - 1
local answers = {}

-- `command` over `list` in parts (Lua's unpack takes some 8,000 values at most), replies joined;
-- a list of one part in one call, its reply as it is.
local function inParts(command, key, list, size)
  if #list <= size then
    return key and redis.call(command, key, unpack(list)) or redis.call(command, unpack(list))
  end
  local replies = {}
  for first = 1, #list, size do
    local part = {}
    for i = first, math.min(first + size - 1, #list) do part[#part + 1] = list[i] end
    local reply = key and redis.call(command, key, unpack(part)) or redis.call(command, unpack(part))
    if type(reply) == 'table' then
      for _, value in ipairs(reply) do replies[#replies + 1] = value end
    end
  end
  return replies
end

-- Each window's last inbound time: the keys read where they are (a copy of them cost Redis a fifth
-- of the call), in parts past what one call may unpack.
local lasts
if at - 1 <= 4000 then
  lasts = redis.call('MGET', unpack(KEYS, 1, at - 1))
else
  local windows = {}
  for i = 1, at - 1 do windows[i] = KEYS[i] end
  lasts = inParts('MGET', nil, windows, 1000)
end
-- The recipients outside their window, and where each stands in the answers.
local members, places, outside = {}, {}, 0
for i = 1, at - 1 do
  local last = lasts[i] and tonumber(lasts[i])
  if last and last + serviceWindow > now then
    answers[i] = -last
  else
    outside = outside + 1
    members[outside] = ARGV[i + 4]
    places[outside] = i
  end
end
if #members == 0 then return answers end

local reach, recent = reachNow(at, recentAt, now, window)
if farFromLimit(reach, recent, #members, limit) then
  appendRecent(recentAt, now, window, members)
  if outside == at - 1 then return 1 end
  for j = 1, #places do answers[places[j]] = 1 end
  return answers
end
-- Near the limit: what waits in the list folded first; what a fold leaves is counted as reached.
if recent > 0 then reach, recent = foldNow(at, recentAt, window, recent) end
reach = reach + recent

local scores = inParts('ZMSCORE', KEYS[at], members, 1000)
local reached, add, roomAt = {}, {}, nil
for j = 1, #members do
  local member = members[j]
  local answer
  if scores[j] or reached[member] then
    answer = 0
  elseif reach < limit then
    answer = 1
    reach = reach + 1
  else
    roomAt = roomAt or oldestReached(at, recentAt, now) + window
    answer = roomAt
  end
  if answer <= 1 and not reached[member] then
    reached[member] = true
    add[#add + 1] = now
    add[#add + 1] = member
  end
  answers[places[j]] = answer
end
if #add > 0 then
  inParts('ZADD', KEYS[at], add, 2000)
  redis.call('PEXPIRE', KEYS[at], window)
end
return answers
