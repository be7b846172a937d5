-- Marketing messages' whole consent check in one round trip: each message's suppression entry (as
-- its key's owner reads it: scopeForOwner) and then the cap.
-- KEYS: any number, in pairs, for each message in turn: its entry (`suppressionKey`) and its count
-- (`marketingCountKey`). A pair's keys share a hash tag: on a Cluster, one pair per call.
-- ARGV[1] the cap's count, ARGV[2] its window (ms, from the first message counted), then each
-- message's owner in turn.
-- Returns one item per pair: the entry's scope when one blocks it (nothing counted), else 1 (counted)
-- or 0 (over the cap).

--- @include "includes/scopeForOwner"
local answers = {}
for i = 1, #KEYS, 2 do
  local scope = scopeForOwner(redis.call('GET', KEYS[i]), ARGV[2 + (i + 1) / 2])
  if scope then
    answers[#answers + 1] = scope
  else
    local n = tonumber(redis.call('GET', KEYS[i + 1]) or '0')
    if n >= tonumber(ARGV[1]) then
      answers[#answers + 1] = 0
    else
      redis.call('INCR', KEYS[i + 1])
      if n == 0 then redis.call('PEXPIRE', KEYS[i + 1], ARGV[2]) end
      answers[#answers + 1] = 1
    end
  end
end
return answers
