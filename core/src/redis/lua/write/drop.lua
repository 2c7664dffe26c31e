-- Remove a writer's holds without a latch: the whole field (client close, cleanup after a loss),
-- or one hold of a cancelled acquire when the field still has the count that acquire produced.
-- KEYS[1] lock hash; KEYS[2] channel; ARGV[1] message '1'; ARGV[2] writer field;
-- ARGV[3] 'publish' or 'spublish'; ARGV[4] '' to drop the field, or the expected current count
-- Returns 1 when something was removed, 0 otherwise.
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
if redis.call('hlen', KEYS[1]) <= 1 then
  redis.call('del', KEYS[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call(ARGV[3], KEYS[2], ARGV[1])
return 1
