-- Releases the claims of messages whose final outcome is committed in Postgres (message-claims.ts):
-- each claim in KEYS keeps ARGV[1] ms to live, never more than it had (LT); 0 deletes it. Any
-- number of keys: a batch of outcomes costs one command, not one per message. Off a Cluster only:
-- there the claims sit on many slots, and the caller sends one PEXPIRE (or DEL) per key.
-- Returns how many claims it released.
local ms = tonumber(ARGV[1])
local released = 0
for i = 1, #KEYS do
  if ms > 0 then
    released = released + redis.call('PEXPIRE', KEYS[i], ms, 'LT')
  else
    released = released + redis.call('DEL', KEYS[i])
  end
end
return released
