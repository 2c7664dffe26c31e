-- Release one read hold of a Redisson RReadWriteLock, as Redisson's read unlock does: decrement
-- the reader's count and delete that hold's key; while other holders remain, the hash keeps the
-- longest lease of their hold keys; otherwise delete it and publish '0'. A retried release is made
-- idempotent by the owner's hold count (see lock/release.lua).
-- KEYS[1] lock hash; KEYS[2] channel redisson_rwlock:{<name>};
-- KEYS[3] the owner's hold-key prefix {<name>}:<field>:rwlock_timeout; KEYS[4] {<name>}
-- ARGV[1] message '0'; ARGV[2] lease ms (unused: hold keys carry the leases); ARGV[3] reader
-- field; ARGV[4] 'publish' or 'spublish'; ARGV[5] the owner's read hold count before this release;
-- ARGV[6] '1' on a retry after a lost reply
-- Returns nil when the owner holds nothing, 0 when its count went down, 1 when its last read hold
-- was released (the lock itself may still be held by other readers).
local held = redis.call('hmget', KEYS[1], ARGV[3], 'mode')
local count = tonumber(held[1] or '0')
local mode = held[2]
if ARGV[6] == '1' and count == tonumber(ARGV[5]) - 1 then
  if count == 0 then
    return 1
  end
  return 0
end
if mode == false then
  -- Expired or deleted: wake whoever waits for it, as Redisson does.
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  return nil
end
if count == 0 then
  return nil
end
local left = count - 1
-- Holders' fields left in the hash besides 'mode' once this hold is gone.
local others = redis.call('hlen', KEYS[1]) - 1
if left == 0 then
  others = others - 1
  if others == 0 then
    -- The only holder's last hold: the lock goes with it.
    redis.call('del', KEYS[1], KEYS[3] .. ':' .. count)
    redis.call(ARGV[4], KEYS[2], ARGV[1])
    return 1
  end
  redis.call('hdel', KEYS[1], ARGV[3])
else
  redis.call('hincrby', KEYS[1], ARGV[3], -1)
end
redis.call('del', KEYS[3] .. ':' .. count)
local result = 0
if left == 0 then
  result = 1
end
if others > 0 then
  local longest = -3
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local n = tonumber(redis.call('hget', KEYS[1], field))
    if n then
      for i = n, 1, -1 do
        longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i))
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
    return result
  end
  if mode == 'write' then
    return result
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
if left > 0 then
  -- Our remaining holds' keys had all expired: those holds are gone.
  return nil
end
return 1
