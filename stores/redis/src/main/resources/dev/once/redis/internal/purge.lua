-- Purge one bucket: deletes up to ARGV[2] records whose expires_at <= ARGV[1] (epoch micros).
-- KEYS[1] expiry index, KEYS[2] lease index of the bucket. The records are read through the
-- index members, which live in the bucket's slot (same hash tag). Returns how many were deleted.
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local deleted = 0
while deleted < limit do
  local batch = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, limit - deleted)
  if #batch == 0 then
    break
  end
  for _, rec in ipairs(batch) do
    local expires = redis.call('HGET', rec, 'expires_at')
    if not expires then
      -- Redis expired the record already: only the index entries are left.
      redis.call('ZREM', KEYS[1], rec)
      redis.call('ZREM', KEYS[2], rec)
    elseif tonumber(expires) <= now then
      redis.call('DEL', rec)
      redis.call('ZREM', KEYS[1], rec)
      redis.call('ZREM', KEYS[2], rec)
      deleted = deleted + 1
    else
      redis.call('ZADD', KEYS[1], expires, rec)
    end
  end
end
return deleted
