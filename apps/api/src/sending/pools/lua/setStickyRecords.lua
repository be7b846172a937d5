-- A turn's sticky records of pooled sends (docs/sender-pools.md, "How stickiness is kept"), in one call
-- instead of a SET each: the API's cost of a pipeline is per command, and a turn of new recipients
-- writes one record each. Single server only: on a Cluster the records' keys spread over slots
-- (not hash-tagged), and the caller sets each on its own.
-- KEYS: the records' keys (any number). ARGV[1]: their life in ms; ARGV[1 + i]: KEYS[i]'s value.
local ttl = ARGV[1]
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[i + 1], 'PX', ttl)
end
return #KEYS
