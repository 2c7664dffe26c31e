-- Redisson's forceUnlock of one half of an RReadWriteLock: delete the hash only when it is held
-- in that half's mode, and wake the waiters.
-- KEYS[1] lock hash; KEYS[2] channel; ARGV[1] message ('0' read, '1' write);
-- ARGV[2] 'publish' or 'spublish'; ARGV[3] 'read' or 'write'
if redis.call('hget', KEYS[1], 'mode') == ARGV[3] then
  redis.call('del', KEYS[1])
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
