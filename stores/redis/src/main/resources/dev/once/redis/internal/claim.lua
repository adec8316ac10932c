-- Claim: the decision of dev.once.spi.ClaimRules.decide, atomically, in one round trip.
-- KEYS[1] record hash, KEYS[2] expiry index, KEYS[3] lease index (one bucket, one slot).
-- ARGV[1] now, ARGV[2] fingerprint, ARGV[3] lease_until, ARGV[4] expires_at (all times epoch
-- microseconds from the caller's clock, never Redis TIME), ARGV[5] first token of a new key,
-- ARGV[6] physical expiry margin in ms.
-- Numbers are compared with tonumber (exact below 2^53) and written with %d, never tostring.
local rec, expiry, leases = KEYS[1], KEYS[2], KEYS[3]
local now = tonumber(ARGV[1])
local margin = tonumber(ARGV[6])

local function ttl(expires)
  return string.format('%d', math.ceil((expires - now) / 1000) + margin)
end

local cur = redis.call('HMGET', rec, 'status', 'fingerprint', 'token', 'lease_until', 'attempts',
  'expires_at', 'checkpoint_name', 'checkpoint_data', 'outcome_kind', 'outcome_type',
  'outcome_body')
local status = cur[1]

if status and now < tonumber(cur[6]) then
  if cur[2] ~= ARGV[2] then
    return {'M'}
  end
  if status == 'COMPLETED' then
    return {'R', cur[3], cur[9], cur[10], cur[11]}
  end
  if status == 'IN_PROGRESS' and now < tonumber(cur[4]) then
    return {'I', cur[4]}
  end

  -- A passed lease (takeover) or a retryable failure (retry): token + 1, the checkpoint kept.
  local takeover = '0'
  if status == 'IN_PROGRESS' then
    takeover = '1'
  end
  local token = string.format('%d', tonumber(cur[3]) + 1)
  local attempts = string.format('%d', tonumber(cur[5]) + 1)
  local expires = math.max(tonumber(cur[6]), tonumber(ARGV[4]))
  local expiresText = string.format('%d', expires)
  redis.call('HSET', rec, 'status', 'IN_PROGRESS', 'token', token, 'lease_until', ARGV[3],
    'attempts', attempts, 'updated_at', ARGV[1], 'expires_at', expiresText)
  redis.call('ZADD', expiry, expiresText, rec)
  redis.call('ZADD', leases, ARGV[3], rec)
  redis.call('PEXPIRE', rec, ttl(expires))
  if cur[7] then
    return {'A', token, attempts, ARGV[3], takeover, cur[7], cur[8]}
  end
  return {'A', token, attempts, ARGV[3], takeover}
end

-- No record, or an expired one: a new record; the token continues from the expired one.
-- Only here, where index entries are added, entries are dropped whose records Redis itself
-- already expired (no Maintenance running), so that the indexes do not grow without bound:
-- up to 16 on one new record in 8 (picked by the clock's microseconds), 2 a record on average,
-- one command fewer on the other 7; replays and duplicates stay read-only.
if now % 8 == 0 then
  local gone = redis.call('ZRANGEBYSCORE', expiry, '-inf',
    string.format('%d', now - margin * 1000), 'LIMIT', 0, 16)
  for _, member in ipairs(gone) do
    if redis.call('EXISTS', member) == 0 then
      redis.call('ZREM', expiry, member)
      redis.call('ZREM', leases, member)
    end
  end
end
local token = ARGV[5]
if status then
  token = string.format('%d', tonumber(cur[3]) + 1)
  redis.call('DEL', rec)
end
redis.call('HSET', rec, 'status', 'IN_PROGRESS', 'fingerprint', ARGV[2], 'token', token,
  'lease_until', ARGV[3], 'attempts', '1', 'created_at', ARGV[1], 'updated_at', ARGV[1],
  'expires_at', ARGV[4])
redis.call('ZADD', expiry, ARGV[4], rec)
redis.call('ZADD', leases, ARGV[3], rec)
redis.call('PEXPIRE', rec, ttl(tonumber(ARGV[4])))
return {'A', token, '1', ARGV[3], '0'}
