-- Redisson's forceUnlock of a fair lock: delete it whoever holds it and wake the queue's head.
-- KEYS[1] lock hash; KEYS[2] channel prefix; KEYS[3] queue; KEYS[4] deadlines; KEYS[5] heartbeats
-- ARGV[1] message '0'; ARGV[2] 'publish' or 'spublish'; ARGV[3] now
--EVICT--
evict(tonumber(ARGV[3]))
if redis.call('del', KEYS[1]) == 1 then
  local head = redis.call('lindex', KEYS[3], 0)
  if head ~= false then
    redis.call(ARGV[2], KEYS[2] .. ':' .. head, ARGV[1])
  end
  return 1
end
return 0
