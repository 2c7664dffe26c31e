-- Release one hold of a Redisson RLock, as Redisson's unlock script does: decrement the owner's
-- count; above zero re-set the lease, at zero delete the key and publish the unlock message.
-- A retried release (the first attempt's reply was lost) is made idempotent by the owner's hold
-- count, where Redisson writes an unlock latch key per request: one owner's calls run one after
-- another, so only that first attempt can have moved the count since the client read it. This
-- saves two calls and a key per release; the stored lock is the same.
-- KEYS[1] lock hash; KEYS[2] channel redisson_lock__channel:{<name>}
-- ARGV[1] unlock message '0'; ARGV[2] lease ms for the remaining holds; ARGV[3] owner field;
-- ARGV[4] 'publish' or 'spublish'; ARGV[5] the owner's hold count before this release, as the
-- client knows it; ARGV[6] '1' on a retry after a lost reply, '' on a first attempt.
-- Returns nil when the owner holds nothing, 0 when the count went down, 1 when the lock was freed.
local count = tonumber(redis.call('hget', KEYS[1], ARGV[3]) or '0')
if ARGV[6] == '1' and count == tonumber(ARGV[5]) - 1 then
  -- The first attempt ran. At zero it freed the lock (a loss just before it looks the same).
  if count == 0 then
    return 1
  end
  return 0
end
if count == 0 then
  return nil
end
if count > 1 then
  redis.call('hincrby', KEYS[1], ARGV[3], -1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
return 1
