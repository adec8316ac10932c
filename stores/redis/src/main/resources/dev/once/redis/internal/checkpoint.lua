-- Checkpoint: replaces the checkpoint of IN_PROGRESS under the caller's token. 1 = done, 0 = lease lost.
-- KEYS[1] record. ARGV[1] token, ARGV[2] now, ARGV[3] name, ARGV[4] data, ARGV[5] expiry margin ms.
local v, tail = held()
if not v then
  return 0
end
local cn, cd = tonumber(string.sub(v, 73, 82)), tonumber(string.sub(v, 84, 93))
put(string.sub(v, 1, 72) .. pad(tostring(#ARGV[3]), 10) .. ' ' .. pad(tostring(#ARGV[4]), 10)
  .. string.sub(v, 94, 154) .. ARGV[3] .. ARGV[4] .. string.sub(v, 155 + cn + cd, tail - 1)
  .. pad(ARGV[2], 16) .. string.sub(v, tail + 16), tonumber(string.sub(v, tail + 17, tail + 32)),
  tonumber(ARGV[2]))
return 1
