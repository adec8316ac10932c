-- Fail: IN_PROGRESS under the caller's token -> FAILED (kept, so the token keeps growing).
-- 1 = done, 0 = lease lost.
-- KEYS[1] record, KEYS[2] expiry index, KEYS[3] lease index.
-- ARGV[1] token, ARGV[2] now, ARGV[3] now + retention, ARGV[4] error, ARGV[5] expiry margin ms.
local cur = redis.call('HMGET', KEYS[1], 'status', 'token', 'lease_until')
if cur[1] ~= 'IN_PROGRESS' or tonumber(cur[2]) ~= tonumber(ARGV[1]) then
  return 0
end
local now = tonumber(ARGV[2])
-- Kept at least until the lease end, as the in-memory store does.
local expires = math.max(tonumber(ARGV[3]), tonumber(cur[3]))
local expiresText = string.format('%d', expires)
redis.call('HSET', KEYS[1], 'status', 'FAILED', 'last_error', ARGV[4], 'updated_at', ARGV[2],
  'expires_at', expiresText)
redis.call('ZADD', KEYS[2], expiresText, KEYS[1])
redis.call('ZREM', KEYS[3], KEYS[1])
if expires > now then
  redis.call('PEXPIRE', KEYS[1],
    string.format('%d', math.ceil((expires - now) / 1000) + tonumber(ARGV[5])))
end
return 1
