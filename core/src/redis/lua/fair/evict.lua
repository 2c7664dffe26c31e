-- Shared by the fair-lock scripts: drop waiters at the head of the queue whose deadline passed
-- (Redisson's rule: the loop stops at the first live head).
-- KEYS[3] queue redisson_lock_queue:{<name>}; KEYS[4] deadlines redisson_lock_timeout:{<name>}
local function evict(now)
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
  end
end
