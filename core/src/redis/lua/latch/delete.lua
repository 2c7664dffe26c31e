-- Redisson RCountDownLatch delete: remove the count, announce '1'.
-- KEYS[1] <name>; KEYS[2] channel; ARGV[1] 'publish'
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[1], KEYS[2], '1')
  return 1
end
return 0
