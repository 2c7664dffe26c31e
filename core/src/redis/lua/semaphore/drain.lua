-- Redisson RSemaphore drainPermits: take every free permit.
-- KEYS[1] <name>. Returns how many were taken.
local value = redis.call('get', KEYS[1])
if value == false or tonumber(value) <= 0 then
  return 0
end
redis.call('set', KEYS[1], 0)
return tonumber(value)
