-- Checkpoint: replaces the checkpoint of IN_PROGRESS under the caller's token. 1 = done, 0 = lease lost.
-- KEYS[1] record. ARGV[1] token, ARGV[2] now, ARGV[3] name, ARGV[4] data.
local cur = redis.call('HMGET', KEYS[1], 'status', 'token')
if cur[1] ~= 'IN_PROGRESS' or tonumber(cur[2]) ~= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'checkpoint_name', ARGV[3], 'checkpoint_data', ARGV[4],
  'updated_at', ARGV[2])
return 1
