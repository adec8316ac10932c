-- Complete: IN_PROGRESS under the caller's token -> COMPLETED. 1 = done (or done before), 0 = lease
-- lost.
-- KEYS[1] record. ARGV[1] token, ARGV[2] the new tail (updated, expires, outcome) built by the
-- caller, ARGV[3] Redis's expiry in ms (the margin past the logical one, computed by the caller).
local v, tail = held()
if not v then
  -- The same completion re-sent after it was applied (its answer lost with a connection) finds
  -- the record COMPLETED under the token with the same outcome (the tail from the outcome lengths
  -- on, byte for byte): acknowledged, nothing written. Anything else is a lost lease.
  local found = tail
  if found and string.sub(found, 1, 4) == '2 C '
      and tonumber(string.sub(found, 5, 20)) == tonumber(ARGV[1]) then
    local at = 155 + (tonumber(string.sub(found, 73, 82)) or -1e9)
      + (tonumber(string.sub(found, 84, 93)) or 0) + (tonumber(string.sub(found, 95, 104)) or 0)
    if at > 0 and string.sub(found, at + 34) == string.sub(ARGV[2], 35) then
      return 1
    end
  end
  return 0
end
redis.call('SET', KEYS[1], '2 C ' .. string.sub(v, 5, tail - 1) .. ARGV[2], 'PX', ARGV[3])
return 1
