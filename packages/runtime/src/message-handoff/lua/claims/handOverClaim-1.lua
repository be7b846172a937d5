-- Hands a message's claim (message-claims.ts) to a new holder, when it is free or held by one of the
-- holders named: a job that gives a message it never sent to another job (a bundle whose pool
-- number fell, docs/sender-pools.md) renames the claim after the job that now has it, so that job takes
-- it over and the first, run again, finds it held by another and leaves the message alone. A
-- cancel's claim, or another job's, is left as it is.
-- KEYS[1] the message's claim. ARGV[1] the new holder, ARGV[2] its life when the claim was free
-- (ms), ARGV[3..] the holders it may be taken from.
-- Returns 1 once the claim is the new holder's, else the holder found.
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then return 1 end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
for i = 3, #ARGV do
  if ARGV[i] == holder then
    redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
    return 1
  end
end
return holder
