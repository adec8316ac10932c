-- Prepended to the scripts that change a record under its fencing token. The record is one string
-- in the format of dev.once.redis.internal.RecordFormat, whose fixed widths let these scripts find
-- fields by offset (1-based here):
--   head  2 S token(5-20) lease(22-37) attempts(39-54) created(56-71) |cn|(73-82) |cd|(84-93)
--         |le|(95-104) claim_id(106-121) \n fingerprint(123-154) checkpoint_name checkpoint_data
--         last_error
--   tail  at T: updated(T..T+15) expires(T+17..T+32) |ok| |ot| |ob| \n(T+66) outcome fields
-- String work is what a script costs Redis most, so each script cuts and joins whole runs of the
-- record instead of parsing it. Numbers are compared with tonumber (exact below 2^53). The claim
-- id is only ever kept: the scripts copy it with the head.

local function pad(s, width)
  return string.rep('0', width - #s) .. s
end

-- The record under KEYS[1] and where its tail starts, if it is IN_PROGRESS under the token
-- ARGV[1]; otherwise nil and the value found (nil when absent; another status or token, a record
-- of format 1, or a value that is not a record).
local function held()
  local v = redis.call('GET', KEYS[1])
  if not v or string.sub(v, 1, 4) ~= '2 I ' or tonumber(string.sub(v, 5, 20)) ~= tonumber(ARGV[1]) then
    return nil, v
  end
  return v, 155 + tonumber(string.sub(v, 73, 82)) + tonumber(string.sub(v, 84, 93))
    + tonumber(string.sub(v, 95, 104))
end

-- SET KEYS[1] to v, Redis's own expiry the margin ARGV[#ARGV] (ms) past the logical expiry; an
-- expiry that is already past keeps the key's expiry as it is (KEEPTTL).
local function put(v, expires, now)
  if expires > now then
    redis.call('SET', KEYS[1], v, 'PX',
      string.format('%d', math.ceil((expires - now) / 1000) + tonumber(ARGV[#ARGV])))
  else
    redis.call('SET', KEYS[1], v, 'KEEPTTL')
  end
end

