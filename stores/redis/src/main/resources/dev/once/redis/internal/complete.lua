-- Complete: IN_PROGRESS under the caller's token -> COMPLETED. 1 = done, 0 = lease lost.
-- KEYS[1] record. ARGV[1] token, ARGV[2] the new tail (updated, expires, outcome) built by the
-- caller, ARGV[3] Redis's expiry in ms (the margin past the logical one, computed by the caller).
local v, tail = held()
if not v then
  return 0
end
redis.call('SET', KEYS[1], '1 C ' .. string.sub(v, 5, tail - 1) .. ARGV[2], 'PX', ARGV[3])
return 1
