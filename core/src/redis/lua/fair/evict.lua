-- Shared by the fair-lock scripts: drop dead waiters.
-- KEYS[3] queue redisson_lock_queue:{<name>}; KEYS[4] deadlines redisson_lock_timeout:{<name>};
-- KEYS[5] heartbeats polylock_lock_alive:{<name>} (polylock's waiters only)
-- A polylock waiter whose heartbeat passed is dead wherever it queues; then Redisson's rule: drop
-- the head while its deadline passed (the loop stops at the first live head).
local function evict(now)
  for _, dead in ipairs(redis.call('zrangebyscore', KEYS[5], '-inf', now)) do
    redis.call('lrem', KEYS[3], 1, dead)
    redis.call('zrem', KEYS[4], dead)
    redis.call('zrem', KEYS[5], dead)
  end
  while true do
    local head = redis.call('lindex', KEYS[3], 0)
    if head == false then
      return
    end
    local deadline = tonumber(redis.call('zscore', KEYS[4], head))
    if deadline ~= nil and deadline > now then
      return
    end
    redis.call('lpop', KEYS[3])
    redis.call('zrem', KEYS[4], head)
    redis.call('zrem', KEYS[5], head)
  end
end
