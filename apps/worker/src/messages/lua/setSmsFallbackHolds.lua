-- A turn's 131026 holds (fallback-timer.ts: a message WhatsApp took whose fallback has no
-- afterSeconds) in one call instead of a SET each: a bundle of twenty such messages wrote twenty
-- commands, each costing the worker its own request and reply. Their keys share the timers'
-- queue prefix, whose {…} hash tag on a Cluster puts them all on one slot; the caller sets each on
-- its own when that prefix has none.
-- KEYS: the holds' keys (any number). ARGV[1]: their life in seconds; ARGV[1 + i]: KEYS[i]'s value.
local life = ARGV[1]
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[i + 1], 'EX', life)
end
return #KEYS
