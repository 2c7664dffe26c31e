-- A waiter gives up (its wait ran out, or it was cancelled): leave the queue, taking Redisson's
-- wait off the deadline of everyone behind (as Redisson's own give-up does), and if that makes
-- another waiter the head of a free lock, wake it.
-- KEYS[1] lock hash; KEYS[2] channel prefix; KEYS[3] queue; KEYS[4] deadlines; KEYS[5] heartbeats
-- ARGV[1] message '0'; ARGV[2] owner field; ARGV[3] 'publish' or 'spublish'; ARGV[4] now;
-- ARGV[5] Redisson's wait per waiter in ms
--EVICT--
local queue = redis.call('lrange', KEYS[3], 0, -1)
local behind = false
for _, w in ipairs(queue) do
  if behind then
    redis.call('zincrby', KEYS[4], -tonumber(ARGV[5]), w)
  elseif w == ARGV[2] then
    behind = true
  end
end
local was_head = queue[1] == ARGV[2]
redis.call('lrem', KEYS[3], 1, ARGV[2])
redis.call('zrem', KEYS[4], ARGV[2])
redis.call('zrem', KEYS[5], ARGV[2])
evict(tonumber(ARGV[4]))
if was_head and redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[3], 0)
  if head ~= false then
    redis.call(ARGV[3], KEYS[2] .. ':' .. head, ARGV[1])
  end
end
return 1
