-- A new leader's record, written right after its lock was granted.
-- KEYS[1] the lock hash, KEYS[2] the leader record
-- ARGV[1] the holder's field, ARGV[2] its identity, ARGV[3] its term, ARGV[4] the channel,
-- ARGV[5] publish or spublish
-- Returns 1, or 0 when the holder's field is gone (lost before its record was written).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('hset', KEYS[2], 'holder', ARGV[1], 'identity', ARGV[2], 'term', ARGV[3])
local ttl = redis.call('pttl', KEYS[1])
if ttl > 0 then
  redis.call('pexpire', KEYS[2], ttl)
end
redis.call(ARGV[5], ARGV[4], ARGV[3])
return 1
