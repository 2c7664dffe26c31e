-- Redisson RSemaphore addPermits: add (or with a negative delta take away) free permits and
-- announce the new count. RPermitExpirableSemaphore announces the delta, and only a positive one.
-- KEYS[1] <name>; KEYS[2] channel; ARGV[1] delta; ARGV[2] 'publish'; ARGV[3] 'value' or 'delta'
-- Returns the new count of free permits.
local value = tonumber(redis.call('get', KEYS[1]) or '0') + tonumber(ARGV[1])
redis.call('set', KEYS[1], value)
if ARGV[3] == 'value' then
  redis.call(ARGV[2], KEYS[2], value)
elseif tonumber(ARGV[1]) > 0 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
end
return value
