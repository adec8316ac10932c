-- Fail: IN_PROGRESS under the caller's token -> FAILED (kept, so the token keeps growing).
-- 1 = done, 0 = lease lost.
-- KEYS[1] record. ARGV[1] token, ARGV[2] now, ARGV[3] now + retention, ARGV[4] error,
-- ARGV[5] expiry margin ms.
local v, tail = held()
if not v then
  return 0
end
local now = tonumber(ARGV[2])
-- Kept at least until the lease end, as the in-memory store does.
local expires = math.max(tonumber(ARGV[3]), tonumber(string.sub(v, 22, 37)))
local le = tonumber(string.sub(v, 95, 104))
put('1 F ' .. string.sub(v, 5, 94) .. pad(tostring(#ARGV[4]), 10) .. string.sub(v, 105, tail - le - 1)
  .. ARGV[4] .. pad(ARGV[2], 16) .. ' ' .. pad(string.format('%d', expires), 16)
  .. string.sub(v, tail + 33), expires, now)
return 1
