-- Redisson RCountDownLatch trySetCount: set the count only when the latch is not counting.
-- KEYS[1] <name>; KEYS[2] channel redisson_countdownlatch__channel__{<name>}; ARGV[1] count;
-- ARGV[2] 'publish'. Returns 1 when this call set it.
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[1])
  redis.call(ARGV[2], KEYS[2], '1')
  return 1
end
return 0
