-- Adds a business number to the numbers a recipient has an entry on (`optOutNumbersKey`): space-
-- ended numbers, each once. Never removes one: a lifted entry leaves its number listed (a reader
-- then reads that number's entry and finds nothing), so the list can only be wider than the entries.
-- KEYS[1] the recipient's list. ARGV[1] the number.
-- Returns 1 when the number was added, 0 when it was listed already.

local listed = redis.call('GET', KEYS[1])
if listed and string.find(' ' .. listed, ' ' .. ARGV[1] .. ' ', 1, true) then return 0 end
redis.call('APPEND', KEYS[1], ARGV[1] .. ' ')
return 1
