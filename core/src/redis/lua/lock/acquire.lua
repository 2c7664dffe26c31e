-- Acquire or re-enter a Redisson RLock, and hand out a fencing token on every new ownership.
-- KEYS[1] lock hash <name>; KEYS[2] fencing counter redisson_lock_token:{<name>}
-- ARGV[1] lease ms; ARGV[2] owner field <clientId>:<ownerId>;
-- ARGV[3] the hold count the owner had before this acquire (as the client knows it);
-- ARGV[4] '1' on a retry after a lost reply, so that an attempt that already ran is not counted
--         twice; '' on a first attempt.
-- Returns {-1} when the owner's hold (ARGV[3] > 0) is gone from the server; {1, fencing token,
-- hold count} when held, {0, pttl} when another owner holds it.
local expected = tonumber(ARGV[3])
if ARGV[4] == '1' then
  local cur = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
  if cur == expected + 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, tonumber(redis.call('get', KEYS[2]) or '0'), cur}
  end
end
-- The client holds it (expected > 0) but the server no longer has the owner's entry (deleted,
-- force-unlocked, expired): the hold was lost. Say so ({-1}) instead of starting a new
-- ownership (or waiting for another owner) that the caller would take for its re-entry.
if expected > 0 and redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return {-1}
end
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {1, redis.call('incr', KEYS[2]), 1}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  if expected == 0 then
    -- A leftover of an earlier hold of ours that the client already gave up as lost (the
    -- server was unreachable when it was released): start a new ownership over it.
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, redis.call('incr', KEYS[2]), 1}
  end
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {1, tonumber(redis.call('get', KEYS[2]) or '0'), count}
end
return {0, redis.call('pttl', KEYS[1])}
