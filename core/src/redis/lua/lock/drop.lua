-- Remove an owner's holds without a latch: the whole field (client close, cleanup after a loss),
-- or one hold of a cancelled acquire when the field still has the count that acquire produced.
-- KEYS[1] lock hash; KEYS[2] channel; ARGV[1] unlock message '0'; ARGV[2] owner field;
-- ARGV[3] 'publish' or 'spublish' ('' to tell nobody: a RedLock giving back a minority); ARGV[4] '' to drop the field, or the expected current count
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
if ARGV[3] ~= '' and redis.call('exists', KEYS[1]) == 0 then
  redis.call(ARGV[3], KEYS[2], ARGV[1])
end
return 1
