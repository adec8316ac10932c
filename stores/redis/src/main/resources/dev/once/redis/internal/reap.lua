-- Reap one bucket: turns up to ARGV[2] IN_PROGRESS records whose lease_until <= ARGV[1] into
-- FAILED ("lease expired"), keeping token and expiry. KEYS[1] lease index of the bucket.
-- Returns how many were reaped.
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local reaped = 0
while reaped < limit do
  local batch = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, limit - reaped)
  if #batch == 0 then
    break
  end
  for _, rec in ipairs(batch) do
    local cur = redis.call('HMGET', rec, 'status', 'lease_until')
    if cur[1] == 'IN_PROGRESS' and tonumber(cur[2]) <= now then
      redis.call('HSET', rec, 'status', 'FAILED', 'last_error', 'lease expired', 'updated_at', ARGV[1])
      redis.call('ZREM', KEYS[1], rec)
      reaped = reaped + 1
    elseif cur[1] == 'IN_PROGRESS' then
      redis.call('ZADD', KEYS[1], cur[2], rec)
    else
      redis.call('ZREM', KEYS[1], rec)
    end
  end
end
return reaped
