-- Swap: compare-and-set of a whole record, for the transitions decided in Java (a takeover, a
-- retry, a claim of an expired record, a purge, a reap): the caller read ARGV[1] and decided
-- ARGV[2] from it with dev.once.spi.ClaimRules, so the write happens only if nothing changed since.
-- KEYS[1] record. ARGV[1] the value read ('' = absent), ARGV[2] the new value ('' = delete),
-- ARGV[3] PX in ms ('' = KEEPTTL).
-- {1} = written; {0} = the record changed: {0} alone when it is now absent, else {0, value}.
local cur = redis.call('GET', KEYS[1])
if (cur or '') ~= ARGV[1] then
  if cur then
    return {0, cur}
  end
  return {0}
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
elseif ARGV[3] == '' then
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return {1}
