-- Redisson's forceUnlock: delete the lock whoever holds it and wake the waiters.
-- KEYS[1] lock hash; KEYS[2] channel; ARGV[1] unlock message '0'; ARGV[2] 'publish' or 'spublish'
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
