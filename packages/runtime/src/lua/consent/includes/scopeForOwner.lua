-- scopeForOwner(value, owner): the Lua twin of `scopeForOwner` in consent.ts, for the scripts that
-- read the suppression list's Redis copy. value: the copy's value (false: none); owner: the
-- message's owner ('' the recipient's own). Returns the wider scope that blocks it, or false.

local function scopeForOwner(value, owner)
  if not value then return false end
  local bar = string.find(value, '|', 1, true)
  if not bar then return value end
  local own = string.sub(value, 1, bar - 1)
  local mine = ''
  if owner ~= '' then
    local needle = '|' .. owner .. '='
    local at = string.find(value, needle, bar, true)
    if at then
      local from = at + #needle
      local to = string.find(value, '|', from, true)
      mine = string.sub(value, from, to and to - 1 or -1)
    end
  end
  if own == 'all' or mine == 'all' then return 'all' end
  if own ~= '' then return own end
  if mine ~= '' then return mine end
  return false
end
