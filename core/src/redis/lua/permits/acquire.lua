-- Redisson RPermitExpirableSemaphore tryAcquire: take one permit per id given, each with the
-- lease's expiry as its score in {<name>}:timeout.
-- KEYS[1] <name>; KEYS[2] {<name>}:timeout; KEYS[3] channel redisson_sc:{<name>}
-- ARGV[1] now (ms since the epoch, client clock); ARGV[2] the permits' expiry score; ARGV[3]
-- 'publish'; ARGV[4..] the permit ids (16 raw bytes each, chosen by the caller)
-- Returns {1} when taken (also when a retry finds its permits already taken: ids are unique),
-- {0, ms} when not enough are free and the next lease ends in ms, {0, -1} when none will expire.
--RECLAIM--
if redis.call('zscore', KEYS[2], ARGV[4]) then
  return {1}
end
local n = #ARGV - 3
reclaim(ARGV[1], n, ARGV[3])
local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= n then
  redis.call('decrby', KEYS[1], n)
  for i = 4, #ARGV do
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[i])
  end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl)
  end
  return {1}
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] ~= nil and first[2] ~= '922337203685477' then
  return {0, math.max(0, tonumber(first[2]) - tonumber(ARGV[1]))}
end
return {0, -1}
