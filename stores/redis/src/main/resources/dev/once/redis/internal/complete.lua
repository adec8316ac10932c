-- Complete: IN_PROGRESS under the caller's token -> COMPLETED with the outcome. 1 = done, 0 = lease lost.
-- KEYS[1] record, KEYS[2] expiry index, KEYS[3] lease index.
-- ARGV[1] token, ARGV[2] now, ARGV[3] expires_at, ARGV[4] outcome kind, ARGV[5] media type,
-- ARGV[6] body, ARGV[7] expiry margin ms.
local cur = redis.call('HMGET', KEYS[1], 'status', 'token', 'expires_at')
if cur[1] ~= 'IN_PROGRESS' or tonumber(cur[2]) ~= tonumber(ARGV[1]) then
  return 0
end
local now = tonumber(ARGV[2])
local expires = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'status', 'COMPLETED', 'outcome_kind', ARGV[4], 'outcome_type', ARGV[5],
  'outcome_body', ARGV[6], 'updated_at', ARGV[2], 'expires_at', ARGV[3])
-- The expiry index holds a lower bound of each record's expires_at (purge reads the record and
-- puts a live one back under its real expiry): a completion that moves the expiry later, as
-- nearly all do, leaves the claim's entry where it is, one command fewer per completion.
if expires < tonumber(cur[3]) then
  redis.call('ZADD', KEYS[2], ARGV[3], KEYS[1])
end
redis.call('ZREM', KEYS[3], KEYS[1])
redis.call('PEXPIRE', KEYS[1],
  string.format('%d', math.ceil((expires - now) / 1000) + tonumber(ARGV[7])))
return 1
