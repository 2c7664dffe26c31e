-- Acquire or re-enter a Redisson RFairLock: first come, first served.
-- KEYS[1] lock hash <name>; KEYS[2] fencing counter; KEYS[3] queue redisson_lock_queue:{<name>};
-- KEYS[4] deadlines redisson_lock_timeout:{<name>}
-- ARGV[1] lease ms; ARGV[2] owner field; ARGV[3] the owner's hold count before this acquire;
-- ARGV[4] '1' on a retry after a lost reply; ARGV[5] now (ms since the epoch, client clock);
-- ARGV[6] the stale-waiter timeout in ms; ARGV[7] '1' to take a place in the queue (a waiting
-- acquire), '' for a single try that never queues
-- Returns {1, token, count} when held, {0, ms} when not: try again within ms.
-- Unlike Redisson, a queued waiter's deadline is its own (now + the stale-waiter timeout), not
-- the one before it plus the timeout, and every try of a live waiter refreshes it: only dead
-- waiters expire, and they expire after one timeout, not after a chain of them.
--EVICT--
local now = tonumber(ARGV[5])
local expected = tonumber(ARGV[3])
if ARGV[4] == '1' then
  local cur = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
  if cur == expected + 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, tonumber(redis.call('get', KEYS[2]) or '0'), cur}
  end
end
evict(now)
if redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[3], 0)
  if head == false or head == ARGV[2] then
    redis.call('lrem', KEYS[3], 1, ARGV[2])
    redis.call('zrem', KEYS[4], ARGV[2])
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, redis.call('incr', KEYS[2]), 1}
  end
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  if expected == 0 then
    -- A leftover of an earlier hold of ours that the client already gave up as lost.
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, redis.call('incr', KEYS[2]), 1}
  end
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {1, tonumber(redis.call('get', KEYS[2]) or '0'), count}
end
local ttl = redis.call('pttl', KEYS[1])
if ARGV[7] ~= '1' then
  return {0, math.max(ttl, 0)}
end
if redis.call('zscore', KEYS[4], ARGV[2]) == false then
  redis.call('rpush', KEYS[3], ARGV[2])
end
redis.call('zadd', KEYS[4], now + tonumber(ARGV[6]), ARGV[2])
return {0, math.max(ttl, 0)}
