-- Watchdog renewal of many read holds in one round trip: for each reader whose field still
-- exists, re-set the lease of each of its hold keys and of the hash.
-- KEYS[i] lock hash; ARGV[1] lease ms; ARGV[i + 1] the reader field for KEYS[i]
-- Returns one entry per key: 1 renewed, 0 the reader's field is gone (its hold is lost).
local out = {}
for i = 1, #KEYS do
  local field = ARGV[i + 1]
  local n = tonumber(redis.call('hget', KEYS[i], field) or '0')
  if n > 0 then
    local tag = KEYS[i]
    if not string.find(tag, '{', 1, true) then
      tag = '{' .. tag .. '}'
    end
    for j = n, 1, -1 do
      redis.call('pexpire', tag .. ':' .. field .. ':rwlock_timeout:' .. j, ARGV[1])
    end
    redis.call('pexpire', KEYS[i], ARGV[1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
