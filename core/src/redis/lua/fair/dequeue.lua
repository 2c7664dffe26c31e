-- A waiter gives up (its wait ran out, or it was cancelled): leave the queue, and if that makes
-- another waiter the head of a free lock, wake it.
-- KEYS[1] lock hash; KEYS[2] channel prefix; KEYS[3] queue; KEYS[4] deadlines
-- ARGV[1] message '0'; ARGV[2] owner field; ARGV[3] 'publish' or 'spublish'; ARGV[4] now
--EVICT--
local was_head = redis.call('lindex', KEYS[3], 0) == ARGV[2]
redis.call('lrem', KEYS[3], 1, ARGV[2])
redis.call('zrem', KEYS[4], ARGV[2])
evict(tonumber(ARGV[4]))
if was_head and redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[3], 0)
  if head ~= false then
    redis.call(ARGV[3], KEYS[2] .. ':' .. head, ARGV[1])
  end
end
return 1
