-- Redisson RSemaphore/RPermitExpirableSemaphore trySetPermits: set the free permits only when the
-- semaphore was never set, and announce them.
-- KEYS[1] <name>; KEYS[2] channel redisson_sc:{<name>}; ARGV[1] permits; ARGV[2] 'publish'
-- Returns 1 when this call set them, 0 otherwise.
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[1])
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
