-- A business portfolio's reach now and its oldest counted time, for the sender's view and a
-- campaign's feeder: the exact set and the recent list trimmed, and the list folded into the set
-- (at most a fold's worth, includes/recentReach.lua) when the two together reach `foldAt`.
-- KEYS[1] the portfolio's reach (`portfolioReachKey`), KEYS[2] its recent list
-- (`portfolioRecentKey`). ARGV[1] now (ms), ARGV[2] the window (ms), ARGV[3] foldAt (0: always).
-- Returns {reach (the set, and each entry a fold left as a recipient of its own), oldest (ms; 0:
-- none), entries left in the list}.

--- @include "includes/recentReach"

-- The recent list's index, for the includes' calls (KEYS[recentAt]).
local recentAt = 2 -- KEYS[2]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local foldAt = tonumber(ARGV[3])
local reach, recent = reachNow(1, recentAt, now, window)
if recent > 0 and reach + recent >= foldAt then reach, recent = foldNow(1, recentAt, window, recent) end
local oldest = 0
if reach + recent > 0 then oldest = oldestReached(1, recentAt, now) end
return {reach + recent, oldest, recent}
