-- Sets (or, with an empty scope, lifts) one owner's entry in the suppression list's Redis copy, the
-- other owners' entries kept.
-- KEYS[1] the entry (`suppressionKey`).
-- ARGV[1] the owner ('' the recipient's own), ARGV[2] its scope or ''.
-- A value left empty is deleted. Returns the new value.

local value = redis.call('GET', KEYS[1]) or ''
local own, rest = value, ''
local bar = string.find(value, '|', 1, true)
if bar then
  own = string.sub(value, 1, bar - 1)
  rest = string.sub(value, bar)
end
if ARGV[1] == '' then
  own = ARGV[2]
else
  local needle = '|' .. ARGV[1] .. '='
  local at = string.find(rest, needle, 1, true)
  if at then
    local after = string.find(rest, '|', at + 1, true)
    rest = string.sub(rest, 1, at - 1) .. (after and string.sub(rest, after) or '')
  end
  if ARGV[2] ~= '' then rest = rest .. needle .. ARGV[2] end
end
local new = own .. rest
if new == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], new) end
return new
