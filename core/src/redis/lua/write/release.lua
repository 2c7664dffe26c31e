-- Release one write hold of a Redisson RReadWriteLock, as Redisson's write unlock does: above
-- zero re-set the lease; at zero delete the writer's field, then delete the hash if nothing else
-- is left, or switch it to read mode when the same owner still holds read holds (a downgrade).
-- Both publish '1', which wakes every waiter (Redisson publishes nothing on a downgrade, so its
-- readers sleep until the TTL; waking them is harmless to Redisson's waiters).
-- KEYS[1] lock hash; KEYS[2] channel redisson_rwlock:{<name>}
-- ARGV[1] message '1'; ARGV[2] lease ms for the remaining holds; ARGV[3] writer field;
-- ARGV[4] 'publish' or 'spublish'; ARGV[5] the owner's write hold count before this release;
-- ARGV[6] '1' on a retry after a lost reply
-- Returns nil when the owner holds nothing, 0 when the count went down, 1 when it was released.
local count = tonumber(redis.call('hget', KEYS[1], ARGV[3]) or '0')
if ARGV[6] == '1' and count == tonumber(ARGV[5]) - 1 then
  if count == 0 then
    return 1
  end
  return 0
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  return nil
end
if mode ~= 'write' or count == 0 then
  return nil
end
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[3], -1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call(ARGV[4], KEYS[2], ARGV[1])
return 1
