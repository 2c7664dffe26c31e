-- Release one hold of a Redisson RFairLock: as lock/release.lua, but a full release wakes the
-- head of the queue on its own channel (redisson_lock__channel:{<name>}:<its field>).
-- KEYS[1] lock hash; KEYS[2] channel prefix redisson_lock__channel:{<name>}; KEYS[3] queue;
-- KEYS[4] deadlines; KEYS[5] heartbeats
-- ARGV[1] message '0'; ARGV[2] lease ms; ARGV[3] owner field; ARGV[4] 'publish' or 'spublish';
-- ARGV[5] the owner's hold count before this release; ARGV[6] '1' on a retry after a lost reply;
-- ARGV[7] now (ms since the epoch)
-- Returns nil when the owner holds nothing, 0 when the count went down, 1 when it was freed.
--EVICT--
local count = tonumber(redis.call('hget', KEYS[1], ARGV[3]) or '0')
if ARGV[6] == '1' and count == tonumber(ARGV[5]) - 1 then
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
if redis.call('lindex', KEYS[3], 0) == false then
  return 1 -- nobody queues: nobody to wake
end
evict(tonumber(ARGV[7]))
local head = redis.call('lindex', KEYS[3], 0)
if head ~= false then
  redis.call(ARGV[4], KEYS[2] .. ':' .. head, ARGV[1])
end
return 1
