-- Redisson RCountDownLatch countDown: at zero the key goes and '0' wakes every waiter.
-- KEYS[1] <name>; KEYS[2] channel; ARGV[1] 'publish'. Returns the count left.
local v = redis.call('decr', KEYS[1])
if v <= 0 then
  redis.call('del', KEYS[1])
end
if v == 0 then
  redis.call(ARGV[1], KEYS[2], '0')
end
return math.max(v, 0)
