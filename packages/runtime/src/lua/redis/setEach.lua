-- Strings of a turn of the event loop set in one call instead of a SET each (`turnBatchedSet`,
-- redis.ts): the cost of a pipelined command is per command, to the client as to the server.
-- Its keys must share a slot on a Cluster (the caller sets each on its own where they do not).
-- KEYS: the strings' keys (any number). ARGV[1]: their life in ms; ARGV[1 + i]: KEYS[i]'s value.
local life = ARGV[1]
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[i + 1], 'PX', life)
end
return #KEYS
