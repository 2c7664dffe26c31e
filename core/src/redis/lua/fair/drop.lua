-- Remove an owner's holds of a fair lock without a latch (client close, cleanup after a loss), or
-- one hold of a cancelled acquire when the field still has the count that acquire produced; a
-- freed lock wakes the head of the queue.
-- KEYS[1] lock hash; KEYS[2] channel prefix; KEYS[3] queue; KEYS[4] deadlines; KEYS[5] heartbeats
-- ARGV[1] message '0'; ARGV[2] owner field; ARGV[3] 'publish' or 'spublish';
-- ARGV[4] '' to drop the field, or the expected current count; ARGV[5] now
-- Returns 1 when something was removed, 0 otherwise.
--EVICT--
local cur = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
if cur == 0 then
  return 0
end
if ARGV[4] ~= '' then
  if cur ~= tonumber(ARGV[4]) then
    return 0
  end
  if cur > 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], -1)
    return 1
  end
end
redis.call('hdel', KEYS[1], ARGV[2])
if redis.call('exists', KEYS[1]) == 0 then
  evict(tonumber(ARGV[5]))
  local head = redis.call('lindex', KEYS[3], 0)
  if head ~= false then
    redis.call(ARGV[3], KEYS[2] .. ':' .. head, ARGV[1])
  end
end
return 1
