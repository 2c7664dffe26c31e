-- Shared by the expiring-permit scripts: give back permits whose lease ran out (at most `limit`),
-- announcing the new count when it is positive (Redisson's rule).
-- KEYS[1] <name>; KEYS[2] {<name>}:timeout; KEYS[3] channel; now, limit, publish as arguments.
local function reclaim(now, limit, publish)
  local expired = redis.call('zrangebyscore', KEYS[2], 0, now, 'limit', 0, limit)
  if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    local value = redis.call('incrby', KEYS[1], #expired)
    if value > 0 then
      redis.call(publish, KEYS[3], value)
    end
  end
end
