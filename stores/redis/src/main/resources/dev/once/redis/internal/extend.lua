-- Extend: a new lease end for IN_PROGRESS under the caller's token; the expiry follows if needed.
-- 1 = done, 0 = lease lost.
-- KEYS[1] record. ARGV[1] token, ARGV[2] now, ARGV[3] new lease_until, ARGV[4] expiry margin ms.
local v, tail = held()
if not v then
  return 0
end
local now = tonumber(ARGV[2])
local expires = math.max(tonumber(string.sub(v, tail + 17, tail + 32)), tonumber(ARGV[3]))
put(string.sub(v, 1, 21) .. pad(ARGV[3], 16) .. string.sub(v, 38, tail - 1) .. pad(ARGV[2], 16)
  .. ' ' .. pad(string.format('%d', expires), 16) .. string.sub(v, tail + 33), expires, now)
return 1
