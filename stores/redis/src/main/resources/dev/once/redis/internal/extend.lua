-- Extend: a new lease end for IN_PROGRESS under the caller's token; the expiry follows if needed.
-- 1 = done, 0 = lease lost.
-- KEYS[1] record, KEYS[2] expiry index, KEYS[3] lease index.
-- ARGV[1] token, ARGV[2] now, ARGV[3] new lease_until, ARGV[4] expiry margin ms.
local cur = redis.call('HMGET', KEYS[1], 'status', 'token', 'expires_at')
if cur[1] ~= 'IN_PROGRESS' or tonumber(cur[2]) ~= tonumber(ARGV[1]) then
  return 0
end
local now = tonumber(ARGV[2])
local expires = math.max(tonumber(cur[3]), tonumber(ARGV[3]))
local expiresText = string.format('%d', expires)
redis.call('HSET', KEYS[1], 'lease_until', ARGV[3], 'updated_at', ARGV[2], 'expires_at', expiresText)
redis.call('ZADD', KEYS[2], expiresText, KEYS[1])
redis.call('ZADD', KEYS[3], ARGV[3], KEYS[1])
if expires > now then
  redis.call('PEXPIRE', KEYS[1],
    string.format('%d', math.ceil((expires - now) / 1000) + tonumber(ARGV[4])))
end
return 1
