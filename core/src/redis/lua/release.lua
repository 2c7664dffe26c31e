-- Release one hold of a Redisson RLock: Redisson's unlock script and unlock latch, with one HGET
-- in place of HEXISTS + HINCRBY where the last hold goes (same stored result, fewer calls).
-- KEYS[1] lock hash; KEYS[2] channel redisson_lock__channel:{<name>};
-- KEYS[3] latch redisson_unlock_latch:{<name>}:<requestId>
-- ARGV[1] unlock message '0'; ARGV[2] lease ms for the remaining holds; ARGV[3] owner field;
-- ARGV[4] 'publish' or 'spublish'; ARGV[5] latch ttl ms
-- Returns nil when the owner holds nothing, 0 when the count went down, 1 when the lock was freed;
-- a retry with the same requestId gets the first answer from the latch.
local val = redis.call('get', KEYS[3])
if val ~= false then
  return tonumber(val)
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[3]) or '0')
if count == 0 then
  return nil
end
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[3], -1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
