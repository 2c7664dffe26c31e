-- Redisson RSemaphore tryAcquire(n): take n free permits if there are that many.
-- KEYS[1] <name>; ARGV[1] n
-- Returns 1 when taken, 0 when fewer are free.
local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  return 1
end
return 0
