-- Redisson RSemaphore release(n): give back n permits (anyone may) and announce the new count.
-- KEYS[1] <name>; KEYS[2] channel redisson_sc:{<name>}; ARGV[1] n; ARGV[2] 'publish'
-- Returns the new count of free permits.
local value = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], value)
return value
