-- Fail: IN_PROGRESS under the caller's token -> FAILED (kept, so the token keeps growing).
-- A release (of a claim whose work never ran) also takes one from the attempts.
-- 1 = done (or done before), 0 = lease lost.
-- KEYS[1] record. ARGV[1] token, ARGV[2] now, ARGV[3] now + retention, ARGV[4] error,
-- ARGV[5] '1' = the attempt counts (fail), '0' = it does not (release), ARGV[6] expiry margin ms.
local v, tail = held()
if not v then
  -- The same failure re-sent after it was applied finds the record FAILED under the token with
  -- the same error: acknowledged, nothing written. Anything else is a lost lease.
  local found = tail
  if found and string.sub(found, 1, 4) == '2 F '
      and tonumber(string.sub(found, 5, 20)) == tonumber(ARGV[1])
      and tonumber(string.sub(found, 95, 104)) == #ARGV[4] then
    local at = 155 + (tonumber(string.sub(found, 73, 82)) or -1e9)
      + (tonumber(string.sub(found, 84, 93)) or 0)
    if at > 0 and string.sub(found, at, at + #ARGV[4] - 1) == ARGV[4] then
      return 1
    end
  end
  return 0
end
local now = tonumber(ARGV[2])
-- Kept at least until the lease end, as the in-memory store does.
local expires = math.max(tonumber(ARGV[3]), tonumber(string.sub(v, 22, 37)))
local le = tonumber(string.sub(v, 95, 104))
local head = string.sub(v, 5, 94)
if ARGV[5] == '0' then
  -- attempts are at 39-54 of the record, 35-50 of head; an IN_PROGRESS record has at least one.
  head = string.sub(head, 1, 34) .. pad(string.format('%d', tonumber(string.sub(v, 39, 54)) - 1), 16)
    .. string.sub(head, 51)
end
put('2 F ' .. head .. pad(tostring(#ARGV[4]), 10) .. string.sub(v, 105, tail - le - 1)
  .. ARGV[4] .. pad(ARGV[2], 16) .. ' ' .. pad(string.format('%d', expires), 16)
  .. string.sub(v, tail + 33), expires, now)
return 1
