-- Redisson RPermitExpirableSemaphore release(id): give back one permit by its id.
-- KEYS[1] <name>; KEYS[2] {<name>}:timeout; KEYS[3] channel; ARGV[1] the permit id;
-- ARGV[2] now (ms since the epoch); ARGV[3] 'publish'
-- Returns 1 released, 2 released although its lease had run out (counted back all the same, as
-- Redisson does), 0 no such permit.
local expires = redis.call('zscore', KEYS[2], ARGV[1])
if expires == false then
  return 0
end
redis.call('zrem', KEYS[2], ARGV[1])
local value = redis.call('incrby', KEYS[1], 1)
redis.call(ARGV[3], KEYS[3], value)
if tonumber(expires) <= tonumber(ARGV[2]) then
  return 2
end
return 1
