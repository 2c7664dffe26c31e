-- Acquire or re-enter a Redisson RFairLock: first come, first served.
-- KEYS[1] lock hash <name>; KEYS[2] fencing counter; KEYS[3] queue redisson_lock_queue:{<name>};
-- KEYS[4] deadlines redisson_lock_timeout:{<name>}; KEYS[5] heartbeats polylock_lock_alive:{<name>}
-- ARGV[1] lease ms; ARGV[2] owner field; ARGV[3] the owner's hold count before this acquire;
-- ARGV[4] '1' on a retry after a lost reply; ARGV[5] now (ms since the epoch, client clock);
-- ARGV[6] the heartbeat timeout in ms; ARGV[7] '1' to take a place in the queue (a waiting
-- acquire), '' for a single try that never queues; ARGV[8] Redisson's wait per waiter in ms
-- Returns {1, token, count} when held, {0, ms} when not: try again within ms; {-1} when the
-- owner's hold (ARGV[3] > 0) is gone from the server.
-- A queued waiter's deadline follows Redisson's chain (the deadline of the waiter before it plus
-- the wait), so that the wait Redisson takes off every deadline when it grants the lock leaves a
-- live polylock waiter in place; a polylock grant takes it off too. Every try of a live waiter
-- renews its chained deadline and its heartbeat: polylock's scripts drop a waiter whose heartbeat
-- passed, so a dead polylock waiter holds polylock's queue up for one heartbeat timeout.
--EVICT--
local now = tonumber(ARGV[5])
local wait = tonumber(ARGV[8])
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
local free = redis.call('exists', KEYS[1]) == 0
local head = redis.call('lindex', KEYS[3], 0)
if free and head == false then
  -- Nobody holds it and nobody queues (the uncontended case): take it, as an RLock. A dead
  -- waiter's heartbeat left behind is swept by the next call that finds a queue.
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {1, redis.call('incr', KEYS[2]), 1}
end
evict(now)
if free then
  head = redis.call('lindex', KEYS[3], 0)
  if head == false or head == ARGV[2] then
    redis.call('lrem', KEYS[3], 1, ARGV[2])
    redis.call('zrem', KEYS[4], ARGV[2])
    redis.call('zrem', KEYS[5], ARGV[2])
    for _, w in ipairs(redis.call('zrange', KEYS[4], 0, -1)) do
      redis.call('zincrby', KEYS[4], -wait, w)
    end
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
local ttl = math.max(redis.call('pttl', KEYS[1]), 0)
if ARGV[7] ~= '1' then
  return {0, ttl}
end
-- The deadline the waiter before us (or the holder's lease, at the head) leaves us.
local before = now + ttl
local at = redis.call('lpos', KEYS[3], ARGV[2])
local prev
if at == false then
  prev = redis.call('lindex', KEYS[3], -1)
  redis.call('rpush', KEYS[3], ARGV[2])
elseif at > 0 then
  prev = redis.call('lindex', KEYS[3], at - 1)
end
if prev then
  local score = tonumber(redis.call('zscore', KEYS[4], prev))
  if score ~= nil then
    before = score
  end
end
redis.call('zadd', KEYS[4], math.max(before, now) + wait, ARGV[2])
redis.call('zadd', KEYS[5], now + tonumber(ARGV[6]), ARGV[2])
return {0, ttl}
