-- Acquire or re-enter the read half of a Redisson RReadWriteLock, and hand out a fencing token
-- on every new ownership.
-- KEYS[1] lock hash <name>; KEYS[2] fencing counter redisson_lock_token:{<name>};
-- KEYS[3] prefix of the owner's per-hold keys {<name>}:<field>:rwlock_timeout
-- ARGV[1] lease ms; ARGV[2] reader field <clientId>:<ownerId>; ARGV[3] the read hold count the
-- owner had before this acquire (as the client knows it); ARGV[4] '1' on a retry after a lost
-- reply, '' on a first attempt; ARGV[5] the same owner's writer field <clientId>:<ownerId>:write
-- Returns {-1} when the owner's hold (ARGV[3] > 0) is gone from the server; {1, fencing token,
-- hold count} when held, {0, pttl} when a writer holds it.
local expected = tonumber(ARGV[3])
local lease = tonumber(ARGV[1])
if ARGV[4] == '1' then
  local cur = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
  if cur == expected + 1 then
    redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), lease))
    return {1, tonumber(redis.call('get', KEYS[2]) or '0'), cur}
  end
end
-- The client holds it (expected > 0) but the server no longer has the owner's entry (deleted,
-- force-unlocked, expired): the hold was lost. Say so ({-1}) instead of starting a new
-- ownership (or waiting for another owner) that the caller would take for its re-entry.
if expected > 0 and redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return {-1}
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], 1)
  redis.call('set', KEYS[3] .. ':1', 1, 'px', lease)
  redis.call('pexpire', KEYS[1], lease)
  return {1, redis.call('incr', KEYS[2]), 1}
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[5]) == 1) then
  local n
  local old = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
  if expected == 0 and old > 0 then
    -- A leftover of an earlier hold of ours that the client already gave up as lost (the server
    -- was unreachable when it was released): start a new ownership over it.
    for i = 2, old do
      redis.call('del', KEYS[3] .. ':' .. i)
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    n = 1
  else
    n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  end
  redis.call('set', KEYS[3] .. ':' .. n, 1, 'px', lease)
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), lease))
  if n == 1 then
    return {1, redis.call('incr', KEYS[2]), 1}
  end
  return {1, tonumber(redis.call('get', KEYS[2]) or '0'), n}
end
return {0, redis.call('pttl', KEYS[1])}
